//! The safety panel: prompt filter results per prompt index and completion filter results per
//! choice, each category with its severity coloured, filtered categories flagged, jailbreak and
//! protected-material detections with their citation. "Provider sent no safety results" otherwise.

use super::sanitize::sanitize;
use super::theme::{Role as R, Theme};
use super::usage::{heading, note};
use super::wrap;
use crate::app::State;
use crate::engine::message::Message;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::{Map, Value};

/// The panel's lines for reply `m` (or none), `cols` wide.
#[must_use]
pub fn lines(state: &State, m: Option<&Message>, cols: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let Some(m) = m else { return vec![note("no reply yet", theme)] };
    let mut out = Vec::new();
    if let Some(pf) = &m.prompt_filter {
        match pf.as_array() {
            Some(entries) => {
                for e in entries {
                    let idx = e.get("prompt_index").and_then(Value::as_u64).unwrap_or(0);
                    out.push(heading(&format!("prompt {idx}"), theme));
                    match e.get("content_filter_results").and_then(Value::as_object) {
                        Some(results) => out.extend(categories(results, cols, theme)),
                        None => out.extend(raw(e, cols, theme)),
                    }
                }
            }
            None => {
                out.push(heading("prompt", theme));
                out.extend(raw(pf, cols, theme));
            }
        }
    }
    let many = m.choices.len() > 1;
    for c in &m.choices {
        let Some(results) = &c.content_filter else { continue };
        let title = if many { format!("reply · choice {}", c.index) } else { "reply".to_owned() };
        out.push(heading(&title, theme));
        out.extend(categories(results, cols, theme));
    }
    let main = m.main();
    if main.finish_reason.as_deref() == Some("content_filter") {
        out.extend(wrap::plain("⊘ reply stopped by the content filter", cols, strong(theme, R::Error)));
    }
    if !main.refusal.is_empty() {
        let text = format!("⚠ refusal: {}", sanitize(&main.refusal));
        out.extend(wrap::plain(&text, cols, strong(theme, R::Warning)));
    }
    if out.is_empty() {
        let text = if m.is_live() { "waiting for safety results…" } else { "provider sent no safety results" };
        out.push(note(text, theme));
    }
    out
}

fn strong(theme: &Theme, role: R) -> Style {
    theme.style(role).add_modifier(Modifier::BOLD)
}

/// One row per category, flagged ones loud, citations under their category.
fn categories(results: &Map<String, Value>, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (name, v) in results {
        let label = format!("  {}", pretty(name));
        let Some(obj) = v.as_object() else {
            out.extend(raw(v, cols, theme).into_iter().map(|mut l| {
                l.spans.insert(0, Span::styled(format!("{label} "), theme.style(R::Base)));
                l
            }));
            continue;
        };
        let filtered = obj.get("filtered").and_then(Value::as_bool) == Some(true);
        let mut value: Vec<Span<'static>> = Vec::new();
        if let Some(sev) = obj.get("severity").and_then(Value::as_str) {
            let role = match sev {
                "safe" => R::SeveritySafe,
                "low" => R::SeverityLow,
                "medium" => R::SeverityMedium,
                "high" => R::SeverityHigh,
                _ => R::Base,
            };
            value.push(Span::styled(sanitize(sev).into_owned(), theme.style(role)));
        } else if let Some(det) = obj.get("detected").and_then(Value::as_bool) {
            value.push(if det {
                Span::styled("detected", strong(theme, R::SeverityHigh))
            } else {
                Span::styled("no", theme.style(R::SeveritySafe))
            });
        } else if obj.contains_key("filtered") {
            value.push(Span::styled(if filtered { "" } else { "ok" }, theme.style(R::SeveritySafe)));
        } else {
            let text = wrap::clean(&v.to_string()).into_owned();
            value.push(Span::styled(text, theme.style(R::Dim)));
        }
        if filtered {
            if !value.iter().all(|s| s.content.is_empty()) {
                value.push(Span::raw(" "));
            }
            value.push(Span::styled("FILTERED", strong(theme, R::Error)));
        }
        value.retain(|s| !s.content.is_empty());
        let value_w: usize = value.iter().map(|s| wrap::width(&s.content)).sum();
        let gap = cols.saturating_sub(wrap::width(&label) + value_w).max(1);
        let mut spans = vec![Span::styled(label, theme.style(R::Base)), Span::raw(" ".repeat(gap))];
        spans.extend(value);
        out.extend(wrap::spans(spans, cols));
        if let Some(cite) = obj.get("citation").and_then(Value::as_object) {
            let url = cite.get("URL").or_else(|| cite.get("url")).and_then(Value::as_str).unwrap_or("");
            let license = cite.get("license").and_then(Value::as_str).unwrap_or("");
            let link = theme.style(R::Link);
            if !url.is_empty() {
                out.extend(wrap::hanging("    ↳ ", &sanitize(url), cols, link));
            }
            if !license.is_empty() {
                out.extend(wrap::hanging("    ↳ licence: ", &sanitize(license), cols, link));
            }
        }
    }
    out
}

/// A value palaver does not understand, shown compactly as sent.
fn raw(v: &Value, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut text = v.to_string();
    if text.len() > 200 {
        let cut = (0..=200).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    wrap::plain(&sanitize(&text), cols, theme.style(R::Dim))
}

/// Category names as a person reads them.
fn pretty(name: &str) -> String {
    match name {
        "protected_material_code" => "protected code".to_owned(),
        "protected_material_text" => "protected text".to_owned(),
        "self_harm" => "self-harm".to_owned(),
        "custom_blocklists" => "blocklists".to_owned(),
        "indirect_attack" => "indirect attack".to_owned(),
        "ungrounded_material" => "ungrounded".to_owned(),
        other => wrap::clean(&other.replace('_', " ")).into_owned(),
    }
}
