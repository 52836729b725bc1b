use super::*;
use serde_json::json;

fn files(name: &str) -> Result<Option<String>, String> {
    Ok(match name {
        "prompts.txt" => Some("First: {{ topic }}\n---\nSecond: {{ topic | upper }}\n".into()),
        "chat.json" => Some(
            r#"[{"role":"system","content":"You like {{topic}}."},{"role":"user","content":"Say \"{{topic}}\""}]"#
                .into(),
        ),
        "cases.csv" => Some(
            "topic,__expected,__expected2,__description\ncats,icontains:cat,not-contains:dog,felines\nsky,blue,,\n"
                .into(),
        ),
        "more.yaml" => Some("- vars: {topic: rain}\n  assert: [{type: regex, value: '^R'}]\n".into()),
        "note.txt" => Some("from a file\n".into()),
        _ => None,
    })
}

fn run(config: &str) -> Result<Translation, String> {
    translate(config, &files)
}

#[test]
fn prompts_tests_and_default_test_make_the_set() {
    let t = run(r#"
prompts:
  - "Tell me about {{ user.name | upper }} and {{ topic | default('nothing') }}"
providers:
  - id: openai:chat:m
    label: local
    config: {apiBaseUrl: "http://127.0.0.1:1/v1", temperature: 0}
defaultTest:
  vars: {user: {name: ada}}
  assert:
    - type: latency
      threshold: 5000
tests:
  - description: first
    vars: {topic: "file://note.txt"}
    assert:
      - type: contains
        value: "{{ user.name }}"
        weight: 2
  - vars: {user: {name: bob}}
"#)
    .unwrap();
    assert_eq!(t.items.len(), 2);
    assert_eq!(t.items[0].id, "first");
    assert_eq!(t.items[0].prompt, "Tell me about ADA and from a file");
    assert_eq!(t.items[0].expect_raw, Some(json!([{"max_latency_ms": 5000}, {"contains": "ada", "weight": 2}])));
    assert_eq!(t.items[1].id, "test 2");
    assert_eq!(t.items[1].prompt, "Tell me about BOB and nothing");
    assert_eq!(t.items[1].vars, Some(json!({"user": {"name": "bob"}})));
    assert_eq!(t.columns[0].spec(), "local/m");
    assert!(t.unsupported.is_empty() && t.notes.is_empty(), "{t:?}");
}

#[test]
fn prompt_files_split_and_chat_prompts_give_their_system() {
    let t =
        run("prompts: [file://prompts.txt, file://chat.json]\nproviders: [openai:chat:m]\ntests: file://cases.csv\n")
            .unwrap();
    let got: Vec<(&str, &str)> = t.items.iter().map(|i| (i.id.as_str(), i.prompt.as_str())).collect();
    assert_eq!(got[0], ("file://prompts.txt#1 · felines", "First: cats"));
    assert_eq!(got[1], ("file://prompts.txt#2 · felines", "Second: CATS"));
    assert_eq!(got[2], ("file://chat.json · felines", "Say \"cats\""));
    assert_eq!(t.items[2].system.as_deref(), Some("You like cats."));
    assert_eq!(t.items[0].expect_raw, Some(json!([{"icontains": "cat"}, {"not": {"contains": "dog"}}])));
    assert_eq!(t.items[3].expect_raw, Some(json!([{"equals": "blue"}])), "a bare __expected is equals");
    assert_eq!(t.items.len(), 6);
}

#[test]
fn test_files_and_list_vars_expand() {
    let t = run("prompts: ['{{topic}} {{n}}']\nproviders: [openai:chat:m]\ntests:\n  - file://more.yaml\n  - vars: {topic: [a, b], n: [1, 2]}\n").unwrap();
    let got: Vec<&str> = t.items.iter().map(|i| i.prompt.as_str()).collect();
    assert_eq!(got, ["rain ", "a 1", "b 1", "a 2", "b 2"], "every combination (vars in name order)");
    assert_eq!(t.items[2].id, "test 2 #2");
}

#[test]
fn what_palaver_cannot_run_is_named_with_its_test() {
    let t = run(r#"
prompts: ["{{q}}"]
providers: [openai:chat:m]
tests:
  - description: scripted
    vars: {q: a}
    threshold: 0.5
    assert:
      - type: contains
        value: a
      - type: javascript
        value: output.length > 3
      - type: contains
        value: b
        transform: output.trim()
"#)
    .unwrap();
    assert_eq!(
        t.unsupported,
        [
            "test 1 (\"scripted\"): a test `threshold` (palaver passes a cell when every check that weighs something passes)",
            "test 1 (\"scripted\"): assert 2 `javascript` (palaver has no such check)",
            "test 1 (\"scripted\"): assert 3 `contains` with a `transform`",
        ]
    );
    assert_eq!(t.items[0].expect_raw, Some(json!([{"contains": "a"}])), "the rest still runs");
}

#[test]
fn graders_and_mistakes() {
    let t = run(r#"
prompts: ["{{q}}"]
providers: [{id: "openai:chat:m", label: a}]
defaultTest:
  options:
    provider: {id: "openai:chat:judge", config: {apiBaseUrl: "http://127.0.0.1:2/v1"}}
tests:
  - vars: {q: x}
    assert: [{type: llm-rubric, value: "is about {{q}}"}]
"#)
    .unwrap();
    assert_eq!(
        t.items[0].expect_raw,
        Some(json!([{"judge": "is about x", "model": "grader-openai-chat-judge/judge"}]))
    );
    assert_eq!(t.graders.len(), 1);
    assert!(run("providers: [openai:chat:m]\ntests: [{vars: {}}]").unwrap_err().contains("no `prompts`"));
    assert!(
        run("prompts: [x]\nproviders: [openai:chat:m]\ntests: file://gone.csv").unwrap_err().contains("no such file")
    );
    assert!(run("prompts: [file://p.py]\nproviders: [openai:chat:m]\ntests: [{}]").unwrap_err().contains("program"));
    assert!(run("prompts: [x\nproviders").unwrap_err().starts_with("not YAML"));
}
