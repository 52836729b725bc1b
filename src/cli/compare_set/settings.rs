//! The flags that shape a run's requests, kept with the run so `--resume` asks the same way
//! (keys never: they come from the environment or the profile again).

use super::super::args::{ApiArg, Effort, Global, ToolsArg};
use clap::ValueEnum;
use serde_json::{Value, json};

fn name<T: ValueEnum>(v: Option<T>) -> Value {
    v.and_then(|v| v.to_possible_value()).map_or(Value::Null, |p| json!(p.get_name()))
}

fn parse<T: ValueEnum>(v: &Value, key: &str) -> Option<T> {
    v.get(key).and_then(Value::as_str).and_then(|s| T::from_str(s, true).ok())
}

/// The settings of `g` worth keeping.
#[must_use]
pub fn of(g: &Global) -> Value {
    json!({
        "system": g.system, "temperature": g.temperature, "max_tokens": g.max_tokens,
        "reasoning_effort": name(g.reasoning_effort), "no_stream": g.no_stream, "tools": name(g.tools),
        "yes": g.yes, "api": name(g.api), "provider": g.provider, "base_url": g.base_url, "demo": g.demo,
    })
}

/// `g` with the kept settings of a run; where to send (provider, base URL, API, demo) given
/// now wins over what was kept, so a run can resume against a server that moved.
#[must_use]
pub fn apply(g: &Global, s: &Value) -> Global {
    let mut out = g.clone();
    let text = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_owned);
    out.system = text("system");
    out.temperature = s.get("temperature").and_then(Value::as_f64);
    out.max_tokens = s.get("max_tokens").and_then(Value::as_u64);
    out.reasoning_effort = parse::<Effort>(s, "reasoning_effort");
    out.no_stream = s.get("no_stream").and_then(Value::as_bool).unwrap_or(false);
    out.tools = parse::<ToolsArg>(s, "tools");
    out.yes = s.get("yes").and_then(Value::as_bool).unwrap_or(false);
    if g.provider.is_none() && g.base_url.is_none() && !g.demo {
        out.provider = text("provider");
        out.base_url = text("base_url");
        out.demo = s.get("demo").and_then(Value::as_bool).unwrap_or(false);
    }
    if g.api.is_none() {
        out.api = parse::<ApiArg>(s, "api");
    }
    out
}

/// How many samples each cell of a run takes (`--repeat`; 1 for runs without it).
#[must_use]
pub fn repeat(s: &Value) -> u32 {
    s.get("repeat").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).unwrap_or(1).clamp(1, 100)
}

/// The `seed` of a run's first sample (`None`: the run sends none).
#[must_use]
pub fn seed(s: &Value) -> Option<u64> {
    s.get("seed").and_then(Value::as_u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_destinations_given_now_win() {
        let g = Global {
            system: Some("be brief".into()),
            temperature: Some(0.2),
            reasoning_effort: Some(Effort::High),
            tools: Some(ToolsArg::None),
            base_url: Some("http://old/v1".into()),
            ..Global::default()
        };
        let back = apply(&Global::default(), &of(&g));
        assert_eq!(back.system.as_deref(), Some("be brief"));
        assert_eq!(back.temperature, Some(0.2));
        assert_eq!(back.reasoning_effort, Some(Effort::High));
        assert_eq!(back.tools, Some(ToolsArg::None));
        assert_eq!(back.base_url.as_deref(), Some("http://old/v1"));
        let now = Global { base_url: Some("http://new/v1".into()), ..Global::default() };
        assert_eq!(apply(&now, &of(&g)).base_url.as_deref(), Some("http://new/v1"));
    }
}
