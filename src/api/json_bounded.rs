//! A provider's frame or body read as JSON with its token log probabilities bounded while they
//! are parsed, not after: serde would otherwise build every alternative a server sends (three
//! tokens of 100,000 alternatives each held 733 MB) before any limit could look at them.
//!
//! Inside any `logprobs` value, a token keeps at most [`PARSED_ALTERNATIVES`] alternatives (the
//! APIs' own maximum), the `bytes` lists are skipped (the token's text says the same), and one
//! frame or body keeps at most [`PARSED_ENTRIES`] tokens and alternatives in all; the rest is
//! skipped unbuilt. Everything else is read as `serde_json` reads it. The reply's own limits
//! (`logprob_*` in `api::limits`) apply afterwards, over the whole reply.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

/// Alternatives kept per token as a frame is parsed (OpenAI's `top_logprobs` maximum).
pub const PARSED_ALTERNATIVES: usize = 20;

/// Tokens and alternatives kept from one frame or body (what the default `logprob_bytes` holds).
pub const PARSED_ENTRIES: usize = 8 * 1024 * 1024 / super::limits::LOGPROB_ENTRY_BYTES;

/// `data` as JSON, its log probabilities bounded (see the module).
///
/// # Errors
/// When it is not JSON, as `serde_json::from_slice` says.
pub fn from_slice(data: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(data);
    let left = Cell::new(PARSED_ENTRIES);
    let v = Seed { ctx: Ctx::Plain, left: &left }.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// [`from_slice`] of a text.
///
/// # Errors
/// When it is not JSON.
pub fn from_str(data: &str) -> serde_json::Result<Value> {
    from_slice(data.as_bytes())
}

/// A `logprobs` field on its own (the typed chat chunk's), bounded the same way.
///
/// # Errors
/// When it is not JSON.
pub fn logprobs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    let left = Cell::new(PARSED_ENTRIES);
    let v = Seed { ctx: Ctx::Logprobs, left: &left }.deserialize(d)?;
    Ok((!v.is_null()).then_some(v))
}

/// Where in the document a value is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// Outside any `logprobs`.
    Plain,
    /// Inside a `logprobs` value: token lists and tokens.
    Logprobs,
    /// A token's `top_logprobs` list.
    Top,
}

struct Seed<'b> {
    ctx: Ctx,
    /// Log-probability entries this parse may still keep.
    left: &'b Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let cap = if self.ctx == Ctx::Top { PARSED_ALTERNATIVES } else { usize::MAX };
        let counted = self.ctx != Ctx::Plain;
        let child = if counted { Ctx::Logprobs } else { Ctx::Plain };
        let mut out = Vec::new();
        loop {
            let keep = out.len() < cap && (!counted || self.left.get() > 0);
            if !keep {
                // Skipped unbuilt, to the end of the list.
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    break;
                }
                continue;
            }
            if counted {
                self.left.set(self.left.get() - 1);
            }
            match seq.next_element_seed(Seed { ctx: child, left: self.left })? {
                Some(v) => out.push(v),
                None => break,
            }
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let child = match (self.ctx, key.as_str()) {
                (Ctx::Plain, "logprobs") => Ctx::Logprobs,
                (Ctx::Plain, _) => Ctx::Plain,
                (_, "top_logprobs") => Ctx::Top,
                (_, "bytes") => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                _ => Ctx::Logprobs,
            };
            let v = map.next_value_seed(Seed { ctx: child, left: self.left })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(alts: usize) -> Value {
        json!({"token": "a", "logprob": -0.5, "bytes": [97],
               "top_logprobs": (0..alts).map(|i| json!({"token": format!("t{i}"), "logprob": -1.0, "bytes": [116]})).collect::<Vec<_>>()})
    }

    #[test]
    fn everything_else_reads_as_serde_json_reads_it() {
        let text = r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"bytes":[1,2],"content":"hi","n":18446744073709551615}"#;
        assert_eq!(from_str(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
        assert!(from_str("{").is_err() && from_str("[] x").is_err());
    }

    #[test]
    fn alternatives_are_cut_at_twenty_and_bytes_skipped_as_they_are_parsed() {
        let chunk =
            json!({"choices": [{"index": 0, "logprobs": {"content": [entry(100_000), entry(3)], "refusal": null}}]});
        let v = from_str(&chunk.to_string()).unwrap();
        let list = &v["choices"][0]["logprobs"]["content"];
        assert_eq!(list[0]["top_logprobs"].as_array().unwrap().len(), PARSED_ALTERNATIVES);
        assert_eq!(list[1]["top_logprobs"].as_array().unwrap().len(), 3);
        assert!(list[0].get("bytes").is_none() && list[0]["top_logprobs"][0].get("bytes").is_none());
        assert_eq!(list[0]["top_logprobs"][19]["token"], "t19");
        // Responses' shape: the list itself under `logprobs`.
        let ev = json!({"type": "response.output_text.delta", "delta": "a", "logprobs": [entry(30)]});
        let v = from_str(&ev.to_string()).unwrap();
        assert_eq!(v["logprobs"][0]["top_logprobs"].as_array().unwrap().len(), 20);
    }

    #[test]
    fn one_frame_keeps_at_most_its_entries() {
        let n = PARSED_ENTRIES / 21 + 10;
        let body = json!({"logprobs": {"content": (0..n).map(|_| entry(20)).collect::<Vec<_>>()}});
        let v = from_str(&body.to_string()).unwrap();
        let kept: usize = v["logprobs"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| 1 + e["top_logprobs"].as_array().map_or(0, Vec::len))
            .sum();
        assert!(kept <= PARSED_ENTRIES, "{kept}");
        assert!(v["logprobs"]["content"].as_array().unwrap().len() < n);
    }

    #[test]
    fn a_typed_field_is_bounded_too() {
        #[derive(serde::Deserialize)]
        struct C {
            #[serde(default, deserialize_with = "logprobs")]
            logprobs: Option<Value>,
        }
        let c: C = serde_json::from_value(json!({"logprobs": {"content": [entry(50)]}})).unwrap();
        assert_eq!(c.logprobs.unwrap()["content"][0]["top_logprobs"].as_array().unwrap().len(), 20);
        let c: C = serde_json::from_value(json!({"logprobs": null})).unwrap();
        assert!(c.logprobs.is_none());
    }
}
