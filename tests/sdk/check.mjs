// The official OpenAI Node SDK against `palaver serve-demo`, on every demo model:
// chat.completions.parse / responses.parse with a strict json_schema, both stream helpers and
// logprobs. `node tests/sdk/check.mjs BASE_URL` (the SDK from target/sdk-node).
import OpenAI from 'openai';

const baseURL = process.argv[2];
const client = new OpenAI({ baseURL, apiKey: 'sk-demo', maxRetries: 0 });
const schema = {
  type: 'object', additionalProperties: false, required: ['name', 'age', 'tags'],
  properties: { name: { type: 'string' }, age: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
};
const chatFormat = { type: 'json_schema', json_schema: { name: 'person', schema, strict: true } };
const textFormat = { format: { type: 'json_schema', name: 'person', schema, strict: true } };
const messages = [{ role: 'user', content: 'a person' }];
const skip = new Set(['demo-safety', 'demo-error']);
let passed = 0;
let failed = 0;

function person(p) {
  if (!p || typeof p.name !== 'string' || !Number.isInteger(p.age) || !Array.isArray(p.tags)) {
    throw new Error(`not a person: ${JSON.stringify(p)}`);
  }
}

async function check(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`PASS ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e}`);
  }
}

const models = [];
for await (const m of client.models.list()) models.push(m.id);
for (const model of models.filter((m) => !skip.has(m))) {
  await check(`${model} chat parse`, async () => {
    const c = await client.chat.completions.parse({ model, messages, response_format: chatFormat });
    person(c.choices[0].message.parsed);
  });
  await check(`${model} chat stream`, async () => {
    const s = client.chat.completions.stream({ model, messages, response_format: chatFormat });
    const final = await s.finalChatCompletion();
    // The stream helper fills `parsed` only for zod formats; a plain json_schema is read here.
    person(JSON.parse(final.choices[0].message.content));
  });
  await check(`${model} chat logprobs`, async () => {
    const c = await client.chat.completions.create({ model, messages, logprobs: true, top_logprobs: 2 });
    const lp = c.choices[0].logprobs.content;
    if (lp.map((t) => t.token).join('') !== c.choices[0].message.content) throw new Error('tokens do not make the text');
  });
  await check(`${model} responses parse`, async () => {
    const r = await client.responses.parse({ model, input: 'a person', text: textFormat });
    person(r.output_parsed);
  });
  // The Node SDK's Responses stream helper throws on an event type it does not know: that is
  // what demo-future sends on purpose.
  if (model === 'demo-future') continue;
  await check(`${model} responses stream`, async () => {
    const s = client.responses.stream({ model, input: 'a person', text: textFormat });
    const final = await s.finalResponse();
    person(JSON.parse(final.output_text));
  });
}
console.log(`sdk-node: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
