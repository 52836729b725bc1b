//! Model-graded checks: the prompt a judge model is sent (`assets/judges/rubric.md`, or a
//! file a check or the configuration names), the structured output it is asked for, and its
//! answer read leniently as a score from 0 to 1 and a reason. An answer that cannot be read is
//! a failed check saying so, never an error of the run.

use super::expect::answer_json;
use serde_json::{Value, json};

/// The built-in rubric prompt; `{{rubric}}`, `{{prompt}}` and `{{answer}}` are filled in.
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
pub const RUBRIC_PLACEHOLDERS: &[&str] = &["rubric", "prompt", "answer"];
/// The placeholders any judge prompt may use (a `select_best` one: `criterion` and `answers`).
pub const ANY_PLACEHOLDERS: &[&str] = &["rubric", "prompt", "answer", "criterion", "answers"];

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
    let mut out = String::with_capacity(template.len() + question.len() + answer.len());
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let filled = [("{{rubric}}", rubric), ("{{prompt}}", question), ("{{answer}}", answer)]
            .into_iter()
            .find(|(k, _)| tail.starts_with(k));
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
    json!({
        "type": "object",
        "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
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

/// A score as a share: 0–1 as it is, 1–10 and 10–100 scaled down (judges drift to those).
fn share(x: f64) -> Option<f64> {
    match x {
        x if (0.0..=1.0).contains(&x) => Some(x),
        x if x > 1.0 && x <= 10.0 => Some(x / 10.0),
        x if x > 10.0 && x <= 100.0 => Some(x / 100.0),
        _ => None,
    }
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

/// A `score: 0.8` line in prose, for a judge that ignored the JSON it was asked for.
fn prose_score(answer: &str) -> Option<f64> {
    let lower = answer.to_ascii_lowercase();
    let at = lower.find("score")?;
    let rest = lower[at + "score".len()..].trim_start_matches(|c: char| c == ':' || c == '=' || c.is_whitespace());
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    rest[..end].trim_end_matches('.').parse().ok()
}

/// Reads a judge's answer.
///
/// # Errors
/// Why no score could be read from it (for the failed check's detail).
pub fn parse(answer: &str) -> Result<Grade, String> {
    if let Some(o) = object_in(answer) {
        let raw = match o.get("score") {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().trim_end_matches('%').parse().ok(),
            _ => None,
        };
        let Some(raw) = raw else { return Err("the judge's answer has no numeric `score`".into()) };
        let score = share(raw).ok_or_else(|| format!("the judge's score {raw} is not between 0 and 1"))?;
        let reason = o.get("reason").and_then(Value::as_str).unwrap_or("").trim();
        let reason = if reason.is_empty() { "(no reason given)" } else { reason };
        return Ok(Grade { score, reason: reason.to_owned() });
    }
    match prose_score(answer).and_then(share) {
        Some(score) => Ok(Grade { score, reason: clip(answer.trim()) }),
        None => Err(format!("the judge's answer is not a score: {}", clip(answer.trim()))),
    }
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
            "unknown placeholder `{{rubrik}}` (it knows {{rubric}}, {{prompt}}, {{answer}})"
        );
        assert!(
            check_placeholders("Rate it on {{rubric}}", RUBRIC_PLACEHOLDERS).unwrap_err().contains("no `{{answer}}`")
        );
        assert_eq!(check_placeholders("Pick {{answers}} by {{criterion}}", ANY_PLACEHOLDERS), Ok(()));
    }
}
