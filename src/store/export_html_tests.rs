use super::*;
use crate::engine::attachment::Attachment;
use crate::engine::message::{Message, Role, ToolCall, ToolStatus};
use crate::store::export::{ExportRow, FORMAT, VERSION};
use serde_json::json;

/// A 1×1 PNG.
pub(crate) const PNG_B64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn sample() -> Export {
    let png = base64::engine::general_purpose::STANDARD.decode(PNG_B64).unwrap();
    let mut user = Message::user("Look <script>document.title='x'</script> <img src=x onerror=alert(1)>");
    user.attachments.push(Attachment::from_bytes("cat\"><b>.png", png).unwrap());
    let mut call = Message::with_text(Role::Assistant, "");
    call.model = Some("demo-tools".into());
    call.main_mut().reasoning = "thinking <i>hard</i>".into();
    call.main_mut().tool_calls.push(ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: "{\"path\":\"a<b>.txt\"}".into(),
        output: Some("</pre><script>x()</script>".into()),
        status: ToolStatus::Done,
        duration_ms: Some(12),
        ..ToolCall::default()
    });
    let result = Message::tool_result("call_1", "file body <iframe>");
    let mut answer =
        Message::with_text(Role::Assistant, "**Done**\n\n```rust\nfn main() {}\n```\n<svg onload=alert(1)>");
    answer.model = Some("demo-tools".into());
    answer.usage = Some(json!({"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}));
    answer.prompt_filter = Some(
        json!([{"prompt_index": 0, "content_filter_results": {"jailbreak": {"filtered": false, "detected": true}}}]),
    );
    answer.main_mut().content_filter = json!({"hate": {"filtered": false, "severity": "safe"}}).as_object().cloned();
    answer.main_mut().finish_reason = Some("stop".into());
    Export {
        format: FORMAT.into(),
        version: VERSION,
        id: "c-1".into(),
        title: "A <title>".into(),
        model: Some("demo-tools".into()),
        provider: Some("demo".into()),
        api: Some("chat".into()),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:01.000Z".into(),
        compare_group: None,
        compare_column: None,
        active_branch: 1,
        messages: vec![user.clone(), call, result, answer],
        branches: vec![
            ExportBranch {
                branch: 0,
                parent: None,
                fork_position: 0,
                created_at: "2026-01-01T00:00:00.000Z".into(),
                messages: vec![ExportRow { position: 1, message: Message::with_text(Role::Assistant, "old answer") }],
            },
            ExportBranch {
                branch: 1,
                parent: Some(0),
                fork_position: 1,
                created_at: "2026-01-01T00:00:01.000Z".into(),
                messages: vec![],
            },
        ],
        attachments: std::collections::BTreeMap::new(),
    }
    .with_blobs()
}

#[test]
fn nothing_from_the_conversation_becomes_markup() {
    let html = to_html(&sample());
    for bad in ["<script", "<iframe", "<img src=x", "<svg", "<b>", "<i>", "<title>A <"] {
        assert!(!html.contains(bad), "{bad} leaked");
    }
    assert!(html.contains("Look &lt;script&gt;document.title=&#39;x&#39;&lt;/script&gt;"));
    assert!(html.contains("&lt;/pre&gt;&lt;script&gt;x()&lt;/script&gt;"));
    assert!(html.contains(&format!("content=\"{CSP}\"")));
    assert!(!html.to_ascii_lowercase().contains("<script"));
}

#[test]
fn the_page_shows_the_flow_images_usage_safety_and_branches() {
    let html = to_html(&sample());
    // The attached image inline, as a data URI, with its (escaped) name.
    assert!(html.contains(&format!("src=\"data:image/png;base64,{PNG_B64}\"")), "{html}");
    assert!(html.contains("alt=\"cat&quot;&gt;&lt;b&gt;.png\""));
    // Reasoning and the tool call folded; arguments pretty-printed; output there.
    assert!(html.contains("<details class=\"reasoning\"><summary>reasoning</summary>"));
    assert!(html.contains("<summary>⚙ read_file · done · 12 ms</summary>"), "{html}");
    assert!(html.contains("&quot;path&quot;: &quot;a&lt;b&gt;.txt&quot;"));
    assert!(html.contains("<details class=\"tool-result\"><summary>output · 1 line</summary>"));
    // Markdown rendered, code highlighted with inline styles.
    assert!(html.contains("<strong>Done</strong>"));
    assert!(html.contains("<pre class=\"code\" style="));
    // Usage and safety of the answer.
    assert!(html.contains("finish: stop · prompt 12 · completion 7 · total 19"), "{html}");
    assert!(html.contains("prompt 0: jailbreak <span class=\"flagged\">detected</span>"), "{html}");
    assert!(html.contains("reply: hate <span>safe</span>"));
    // Branches listed, the other one's own message inside.
    assert!(html.contains("<h2>Branches (2)</h2>"));
    assert!(html.contains("Branch 1 · from branch 0 at message 2 · 0 messages of its own"));
    assert!(html.contains("old answer"));
    assert_eq!(html.matches("<article class=\"msg").count(), 5);
}

#[test]
fn a_generated_image_is_inline_and_bad_base64_is_dropped() {
    let mut m = Message::with_text(Role::Assistant, "here");
    m.items = vec![
        json!({"type": "image_generation_call", "id": "ig_1", "result": PNG_B64}),
        json!({"type": "image_generation_call", "id": "ig_2", "result": "\"><script>"}),
    ];
    let mut e = sample();
    e.messages = vec![m];
    let html = to_html(&e);
    assert_eq!(html.matches("<figure class=\"generated\">").count(), 1, "{html}");
    assert!(!html.contains("<script"));
}
