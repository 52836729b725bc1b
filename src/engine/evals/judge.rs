//! Model-graded checks: the prompt a judge model is sent (`assets/judges/rubric.md`, or a
//! file a check or the configuration names), the structured output it is asked for, and its
//! answer read leniently as a score from 0 to 1 and a reason. An answer that cannot be read is
//! a failed check saying so, never an error of the run.

use super::expect::{Scale, answer_json};
use serde_json::{Value, json};

/// The built-in rubric prompt; `{{rubric}}`, `{{prompt}}`, `{{answer}}` and `{{scale}}` are
/// filled in.
pub const RUBRIC_PROMPT: &str = include_str!("../../../assets/judges/rubric.md");

/// The built-in `select_best` prompt; `{{criterion}}`, `{{prompt}}` and `{{answers}}` are
/// filled in.
pub const SELECT_BEST_PROMPT: &str = include_str!("../../../assets/judges/select_best.md");

/// The label of the `i`th answer shown: A, B, C…
#[must_use]
pub fn label(i: usize) -> String {
    let letter = u8::try_from(i % 26).map_or('?', |n| char::from(b'A' + n));
    if i < 26 { letter.to_string() } else { format!("{letter}{}", i / 26) }
}

/// A fixed shuffle of `0..n` from `seed`: the order the answers are shown in (so the judge
/// cannot learn a column's place), the same on every resume.
#[must_use]
pub fn shuffle(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = seed | 1;
    for i in (1..n).rev() {
        // xorshift64: small, and good enough to hide an order.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = usize::try_from(x % (i as u64 + 1)).unwrap_or(0);
        order.swap(i, j);
    }
    order
}

/// The `select_best` prompt: the answers (in the order given) under their labels.
#[must_use]
pub fn select_prompt(template: &str, criterion: &str, question: &str, answers: &[&str]) -> String {
    let listed: Vec<String> =
        answers.iter().enumerate().map(|(i, a)| format!("### Answer {}\n\n{a}\n", label(i))).collect();
    let filled = prompt(template, criterion, question, "");
    filled.replace("{{criterion}}", criterion).replace("{{answers}}", &listed.join("\n"))
}

/// Reads a `select_best` answer over `n` labelled answers: the index (in the order shown) of
/// the best and the reason.
///
/// # Errors
/// Why no label could be read from it.
pub fn parse_best(answer: &str, n: usize) -> Result<(usize, String), String> {
    let find = |s: &str| {
        let s = s.trim();
        let s = if s.to_ascii_lowercase().starts_with("answer ") { s["answer ".len()..].trim() } else { s };
        (0..n).find(|&i| s.eq_ignore_ascii_case(&label(i)))
    };
    if let Some(o) = object_in(answer) {
        let best = o.get("best").and_then(Value::as_str).ok_or("the judge's answer has no `best` label")?;
        let i = find(best).ok_or_else(|| format!("the judge picked `{}`, which is no answer's label", clip(best)))?;
        let reason = o.get("reason").and_then(Value::as_str).unwrap_or("").trim();
        return Ok((i, if reason.is_empty() { "(no reason given)".to_owned() } else { reason.to_owned() }));
    }
    let lower = answer.to_ascii_lowercase();
    let after = lower.find("answer ").map(|at| &answer[at + "answer ".len()..]);
    let word = after.and_then(|a| a.split(|c: char| !c.is_ascii_alphanumeric()).next());
    match word.and_then(find) {
        Some(i) => Ok((i, clip(answer.trim()))),
        None => Err(format!("the judge's answer names no answer: {}", clip(answer.trim()))),
    }
}

/// What a judge said.
#[derive(Debug, Clone, PartialEq)]
pub struct Grade {
    /// 0 to 1.
    pub score: f64,
    pub reason: String,
}

/// The placeholders a rubric judge's prompt fills in.
pub const RUBRIC_PLACEHOLDERS: &[&str] = &["rubric", "prompt", "answer", "scale"];
/// The placeholders any judge prompt may use (a `select_best` one: `criterion` and `answers`).
pub const ANY_PLACEHOLDERS: &[&str] = &["rubric", "prompt", "answer", "scale", "criterion", "answers"];

/// The scale a judge is told to score on, in words (`{{scale}}`).
#[must_use]
pub fn scale_words(scale: Option<Scale>) -> String {
    let Scale { low, high } = scale.unwrap_or(Scale { low: 0.0, high: 1.0 });
    format!("a number from {low} to {high}: {low} misses the rubric entirely, {high} meets it fully")
}

/// A rubric judge's prompt: [`prompt`], with the scale filled in; a prompt file without
/// `{{scale}}` is told the declared scale at its end.
#[must_use]
pub fn rubric_prompt(template: &str, scale: Option<Scale>, rubric: &str, question: &str, answer: &str) -> String {
    let words = scale_words(scale);
    let mut out = fill(
        template,
        &[("{{rubric}}", rubric), ("{{prompt}}", question), ("{{answer}}", answer), ("{{scale}}", &words)],
    );
    if let (Some(s), false) = (scale, template.contains("{{scale}}")) {
        out.push_str(&format!("\n\nGive the score as a number from {} to {}.\n", s.low, s.high));
    }
    out
}

/// Checks a judge prompt's `{{placeholders}}` against `known`: a misspelt one would reach the
/// judge as it is written, and a prompt without the answer grades nothing.
///
/// # Errors
/// The first unknown placeholder, or no `{{answer}}`/`{{answers}}` at all.
pub fn check_placeholders(template: &str, known: &[&str]) -> Result<(), String> {
    let mut rest = template;
    let mut names = Vec::new();
    while let Some(at) = rest.find("{{") {
        let tail = &rest[at + 2..];
        let Some(end) = tail.find("}}") else { break };
        names.push(tail[..end].trim());
        rest = &tail[end + 2..];
    }
    if let Some(bad) = names.iter().find(|n| !known.contains(n)) {
        let list: Vec<String> = known.iter().map(|k| format!("{{{{{k}}}}}")).collect();
        return Err(format!("unknown placeholder `{{{{{bad}}}}}` (it knows {})", list.join(", ")));
    }
    if !names.iter().any(|n| *n == "answer" || *n == "answers") {
        return Err("no `{{answer}}` in it: the judge would not see the answer".into());
    }
    Ok(())
}

/// The judge's prompt: `template` with the rubric, the question and the answer filled in (one
/// pass, so text inside the answer that looks like a placeholder stays as it is).
#[must_use]
pub fn prompt(template: &str, rubric: &str, question: &str, answer: &str) -> String {
    rubric_prompt(template, None, rubric, question, answer)
}

/// `template` with each placeholder of `values` filled in, in one pass.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let filled = values.iter().find(|(k, _)| tail.starts_with(k));
        match filled {
            Some((k, v)) => {
                out.push_str(v);
                rest = &tail[k.len()..];
            }
            None => {
                out.push_str("{{");
                rest = &tail[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The JSON schema the judge's answer is asked to follow where the provider takes one.
#[must_use]
pub fn schema() -> Value {
    scaled_schema(None)
}

/// [`schema`], its score bounded by the declared scale.
#[must_use]
pub fn scaled_schema(scale: Option<Scale>) -> Value {
    let Scale { low, high } = scale.unwrap_or(Scale { low: 0.0, high: 1.0 });
    json!({
        "type": "object",
        "properties": {"score": {"type": "number", "minimum": low, "maximum": high}, "reason": {"type": "string"}},
        "required": ["score", "reason"],
        "additionalProperties": false
    })
}

/// The JSON schema of a `select_best` answer over `n` answers: `best` is one of their labels.
#[must_use]
pub fn select_schema(n: usize) -> Value {
    let labels: Vec<String> = (0..n).map(label).collect();
    json!({
        "type": "object",
        "properties": {"best": {"type": "string", "enum": labels}, "reason": {"type": "string"}},
        "required": ["best", "reason"],
        "additionalProperties": false
    })
}

/// A score as a share: a score stated on its own scale (`7/10`, `3.5 out of 5`) is read on
/// that scale; else on the declared scale, where one is (outside it, it is no verdict);
/// else 0–1 as it is, 1–10 and 10–100 scaled down (judges drift to those).
fn share(x: f64, scale: Option<f64>, declared: Option<Scale>) -> Option<f64> {
    match (x, scale) {
        (x, Some(max)) if max > 0.0 && (0.0..=max).contains(&x) => Some(x / max),
        (_, Some(_)) => None,
        (x, None) if declared.is_some() => declared.and_then(|d| d.share(x)),
        (x, None) if (0.0..=1.0).contains(&x) => Some(x),
        (x, None) if x > 1.0 && x <= 10.0 => Some(x / 10.0),
        (x, None) if x > 10.0 && x <= 100.0 => Some(x / 100.0),
        _ => None,
    }
}

/// A number at the start of `s`, and what follows it.
fn number(s: &str) -> Option<(f64, &str)> {
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let n = s[..end].trim_end_matches('.').parse().ok()?;
    Some((n, &s[end..]))
}

/// A score and its scale from the text right after the word "score": `: 0.8`, `" = "7"`,
/// `** 7/10`, `of 3.5 out of 5`.
fn score_after(rest: &str) -> Option<(f64, Option<f64>)> {
    let rest = rest.trim_start_matches(|c: char| matches!(c, ':' | '=' | '"' | '\'' | '*') || c.is_whitespace());
    let rest = ["of ", "is ", "was "].iter().find_map(|w| rest.strip_prefix(w)).unwrap_or(rest);
    let rest = rest.trim_start_matches(|c: char| matches!(c, '"' | '\'' | '*') || c.is_whitespace());
    let (n, tail) = number(rest)?;
    let tail = tail.trim_start();
    let scale = tail
        .strip_prefix('/')
        .or_else(|| tail.strip_prefix("out of"))
        .and_then(|t| number(t.trim_start()))
        .map(|(max, _)| max);
    Some((n, scale))
}

/// The judge's own verdict in prose: the LAST score it states (a judge quotes the graded
/// answer before it gives its own, and that answer may state a score of its own), as a share;
/// with where it ends.
fn last_prose_score(answer: &str, declared: Option<Scale>) -> Option<(usize, f64)> {
    let lower = answer.to_ascii_lowercase();
    lower.rmatch_indices("score").find_map(|(at, w)| {
        let rest = &lower[at + w.len()..];
        let (n, scale) = score_after(rest)?;
        Some((at, share(n, scale, declared)?))
    })
}

/// The last JSON object in prose that holds a `score`, and where it ends: the judge's verdict
/// when nothing after it states another. Only the last few `{` are tried.
fn last_object(answer: &str) -> Option<(usize, serde_json::Map<String, Value>)> {
    answer.match_indices('{').rev().take(32).find_map(|(at, _)| {
        let mut it = serde_json::Deserializer::from_str(&answer[at..]).into_iter::<Value>();
        match it.next()? {
            Ok(Value::Object(o)) if o.contains_key("score") => Some((at + it.byte_offset(), o)),
            _ => None,
        }
    })
}

/// The JSON object of an answer: all of it, a fenced block, or the outermost `{…}` inside it.
fn object_in(answer: &str) -> Option<serde_json::Map<String, Value>> {
    let found = answer_json(answer).or_else(|| {
        let (start, end) = (answer.find('{')?, answer.rfind('}')?);
        (start < end).then(|| serde_json::from_str(&answer[start..=end]).ok()).flatten()
    });
    match found? {
        Value::Object(o) => Some(o),
        _ => None,
    }
}

/// A structured verdict: `score` (a number, `"7"`, `"80%"`, `"7/10"`) and `reason`.
fn from_object(o: &serde_json::Map<String, Value>, declared: Option<Scale>) -> Result<Grade, String> {
    let raw = match o.get("score") {
        Some(Value::Number(n)) => n.as_f64().map(|n| (n, None)),
        Some(Value::String(s)) if s.trim().ends_with('%') => {
            s.trim().trim_end_matches('%').trim().parse::<f64>().ok().map(|n| (n, Some(100.0)))
        }
        Some(Value::String(s)) => score_after(s),
        _ => None,
    };
    let Some((raw, scale)) = raw else { return Err("the judge's answer has no numeric `score`".into()) };
    let Scale { low, high } = declared.unwrap_or(Scale { low: 0.0, high: 1.0 });
    let score = share(raw, scale, declared)
        .ok_or_else(|| format!("the judge's score {raw} is not between {low} and {high}"))?;
    let reason = o.get("reason").and_then(Value::as_str).unwrap_or("").trim();
    let reason = if reason.is_empty() { "(no reason given)" } else { reason };
    Ok(Grade { score, reason: reason.to_owned() })
}

/// Reads a judge's answer: the structured answer when the whole reply is one (as it is asked
/// to be), else the last verdict it states, a JSON object or a `score: …` line. A score quoted
/// from the graded answer earlier in the reply is never the verdict.
///
/// # Errors
/// Why no score could be read from it (for the failed check's detail).
pub fn parse(answer: &str) -> Result<Grade, String> {
    parse_on(answer, None)
}

/// [`parse`] for a judge told to score on `declared`: a bare number is read on that scale.
///
/// # Errors
/// Why no score on the scale could be read from it.
pub fn parse_on(answer: &str, declared: Option<Scale>) -> Result<Grade, String> {
    let whole = serde_json::from_str::<Value>(answer.trim()).ok().or_else(|| fenced_only(answer));
    if let Some(Value::Object(o)) = whole {
        return from_object(&o, declared);
    }
    let prose = last_prose_score(answer, declared);
    match (last_object(answer), prose) {
        // The last `score` stated is inside the last object, or before it.
        (Some((end, o)), Some((p, _))) if p < end => from_object(&o, declared),
        (Some((_, o)), None) => from_object(&o, declared),
        (_, Some((_, score))) => Ok(Grade { score, reason: clip(answer.trim()) }),
        (None, None) => Err(format!("the judge's answer is not a score: {}", clip(answer.trim()))),
    }
}

/// The JSON of a reply that is nothing but one fenced block (a judge that fenced its JSON).
fn fenced_only(answer: &str) -> Option<Value> {
    let body = answer.trim().strip_prefix("```")?.strip_suffix("```")?;
    let body = body.split_once('\n')?.1;
    serde_json::from_str(body.trim()).ok()
}

fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(200).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_fills_its_three_places_once() {
        let p = prompt("R={{rubric}} Q={{prompt}} A={{answer}} {{other}}", "be kind", "hi?", "a {{rubric}}");
        assert_eq!(p, "R=be kind Q=hi? A=a {{rubric}} {{other}}");
        assert!(RUBRIC_PROMPT.contains("{{rubric}}") && RUBRIC_PROMPT.contains("{{answer}}"));
    }

    /// Issue 42: a judge told to score 1–10 that says 3.5 gave 0.28 of the scale, which no
    /// lenient reading may turn into a pass; the scale is in the prompt and the schema.
    #[test]
    fn a_declared_scale_is_told_and_read() {
        let ten = Scale::parse("1-10");
        assert_eq!(ten, Some(Scale { low: 1.0, high: 10.0 }));
        assert!(Scale::parse("10-1").is_none() && Scale::parse("a-b").is_none() && Scale::parse("5").is_none());
        let g = parse_on(r#"{"score": 3.5, "reason": "thin"}"#, ten).unwrap();
        assert!((g.score - 2.5 / 9.0).abs() < 1e-9, "{g:?}");
        let g = parse_on("Reasoning… Score: 10", ten).unwrap();
        assert!((g.score - 1.0).abs() < 1e-9);
        assert_eq!(parse_on(r#"{"score": 0.5}"#, ten).unwrap_err(), "the judge's score 0.5 is not between 1 and 10");
        assert!((parse_on("score: 4/5", ten).unwrap().score - 0.8).abs() < 1e-9, "a stated scale wins");
        let p = rubric_prompt(RUBRIC_PROMPT, ten, "r", "q", "a");
        assert!(p.contains("a number from 1 to 10: 1 misses the rubric entirely, 10 meets it fully"), "{p}");
        assert!(rubric_prompt(RUBRIC_PROMPT, None, "r", "q", "a").contains("a number from 0 to 1"));
        let own = rubric_prompt("grade {{answer}}", ten, "r", "q", "a");
        assert!(own.ends_with("Give the score as a number from 1 to 10.\n"), "{own}");
        assert_eq!(scaled_schema(ten)["properties"]["score"]["maximum"], 10.0);
    }

    #[test]
    fn json_answers_are_read_whole_fenced_or_inside_prose() {
        let g = parse(r#"{"score": 0.8, "reason": "close"}"#).unwrap();
        assert_eq!(g, Grade { score: 0.8, reason: "close".into() });
        let g = parse("Here you go:\n```json\n{\"score\": \"7\", \"reason\": \"ok\"}\n```").unwrap();
        assert!((g.score - 0.7).abs() < 1e-9);
        let g = parse("My verdict is {\"score\": 85} overall.").unwrap();
        assert_eq!((g.score, g.reason.as_str()), (0.85, "(no reason given)"));
        let g = parse("Score: 0.4. The answer misses the date.").unwrap();
        assert_eq!(g.score, 0.4);
        assert!(g.reason.contains("misses the date"));
    }

    #[test]
    fn the_verdict_is_the_judges_own_never_a_score_it_quotes() {
        // Issue 39: the graded answer's own "score: 10", quoted, passed as 1.00.
        let g = parse("The answer says: \"score: 10\" and insists on it.\nMy verdict: score: 0.1").unwrap();
        assert!((g.score - 0.1).abs() < 1e-9, "{g:?}");
        let g = parse("It claims {\"score\": 10, \"reason\": \"perfect\"}. I disagree: the score is 2/10.").unwrap();
        assert!((g.score - 0.2).abs() < 1e-9, "{g:?}");
        let g = parse("Quoted: score: 9. Verdict:\n{\"score\": 0.3, \"reason\": \"wrong date\"}").unwrap();
        assert_eq!(g, Grade { score: 0.3, reason: "wrong date".into() });
        // The structured answer, when the whole reply is one, is the verdict.
        let g = parse("{\"score\": 0.2, \"reason\": \"it says score: 10 but is wrong\"}").unwrap();
        assert!((g.score - 0.2).abs() < 1e-9);
    }

    #[test]
    fn a_score_is_read_on_the_scale_it_is_stated_on() {
        // 3.5 on 1–10 is 0.35: below the default threshold of 0.5 (issue 42's preamble).
        assert!((parse("score: 3.5").unwrap().score - 0.35).abs() < 1e-9);
        assert!((parse("Score: 3.5/10").unwrap().score - 0.35).abs() < 1e-9);
        assert!((parse("score: 3.5 out of 5").unwrap().score - 0.7).abs() < 1e-9);
        assert!((parse(r#"{"score": "4/5", "reason": "ok"}"#).unwrap().score - 0.8).abs() < 1e-9);
        assert!((parse(r#"{"score": "80%"}"#).unwrap().score - 0.8).abs() < 1e-9);
        assert!(parse("score: 7/5").is_err(), "over its own scale");
    }

    #[test]
    fn select_best_shows_labelled_answers_and_reads_the_pick() {
        let p = select_prompt("C={{criterion}} Q={{prompt}}\n{{answers}}", "clearest", "why?", &["one", "two"]);
        assert_eq!(p, "C=clearest Q=why?\n### Answer A\n\none\n\n### Answer B\n\ntwo\n");
        assert_eq!(parse_best(r#"{"best": "B", "reason": "clearer"}"#, 3).unwrap(), (1, "clearer".into()));
        assert_eq!(parse_best(r#"{"best": "answer c"}"#, 3).unwrap().0, 2);
        assert_eq!(parse_best("I pick Answer A, it is short.", 3).unwrap().0, 0);
        assert!(parse_best(r#"{"best": "Z"}"#, 3).unwrap_err().contains("no answer's label"));
        assert!(parse_best("none of them", 3).unwrap_err().contains("names no answer"));
        let order = shuffle(4, 42);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
        assert_eq!(order, shuffle(4, 42), "the same seed, the same order");
        assert!((0..20).any(|s| shuffle(3, s) != vec![0, 1, 2]), "not always the columns' order");
        assert_eq!((label(0), label(25)), ("A".to_owned(), "Z".to_owned()));
        assert_eq!(select_schema(2)["properties"]["best"]["enum"], json!(["A", "B"]));
    }

    #[test]
    fn unreadable_answers_say_why() {
        assert!(parse("I like it").unwrap_err().contains("not a score: I like it"));
        assert!(parse(r#"{"reason": "no score"}"#).unwrap_err().contains("no numeric `score`"));
        assert!(parse(r#"{"score": -2, "reason": "x"}"#).unwrap_err().contains("not between 0 and 1"));
        assert!(parse(r#"{"score": 400}"#).is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn a_judge_prompt_names_only_known_placeholders_and_the_answer() {
        assert_eq!(check_placeholders(RUBRIC_PROMPT, RUBRIC_PLACEHOLDERS), Ok(()));
        assert_eq!(
            check_placeholders("Rate {{answer}} on {{rubrik}}", RUBRIC_PLACEHOLDERS).unwrap_err(),
            "unknown placeholder `{{rubrik}}` (it knows {{rubric}}, {{prompt}}, {{answer}}, {{scale}})"
        );
        assert!(
            check_placeholders("Rate it on {{rubric}}", RUBRIC_PLACEHOLDERS).unwrap_err().contains("no `{{answer}}`")
        );
        assert_eq!(check_placeholders("Pick {{answers}} by {{criterion}}", ANY_PLACEHOLDERS), Ok(()));
    }
}
