use super::*;
use crate::engine::compact::{Compaction, SUMMARY_HEADER};
use crate::engine::message::MessageStatus;

fn reply(text: &str) -> Message {
    let mut m = Message::with_text(Role::Assistant, text);
    m.status = MessageStatus::Complete;
    m.main_mut().finish_reason = Some("stop".into());
    m
}

fn failed() -> Message {
    let mut m = Message::assistant_pending();
    m.status = MessageStatus::Failed;
    m
}

fn texts<'a>(r: &'a SummaryRequest<'_>) -> Vec<&'a str> {
    r.messages.iter().map(|m| m.text()).collect()
}

fn estimated(r: &SummaryRequest<'_>) -> u64 {
    r.messages.iter().map(|m| message_tokens(m)).sum::<u64>() + r.max_tokens
}

#[test]
fn the_budget_is_its_own_and_fits_a_small_window() {
    assert_eq!(budget(None, Some(4_096)), 1_024);
    assert_eq!(budget(None, Some(2_000)), 500);
    assert_eq!(budget(None, None), DEFAULT_BUDGET);
    assert_eq!(budget(Some(300), Some(4_096)), 300);
    assert_eq!(budget(Some(0), Some(400)), 100, "0 is not a budget");
}

#[test]
fn a_request_that_fits_goes_whole() {
    let msgs = vec![Message::user("q1"), reply("a1"), Message::user("q2"), reply("a2")];
    let ask = Message::user("Summarise.");
    let r = summary_request(&msgs, &ask, None, Some(4_096), 1_024);
    assert_eq!(texts(&r), ["q1", "a1", "q2", "a2", "Summarise."]);
    assert_eq!((r.max_tokens, r.trimmed), (1_024, Trimmed::default()));
    assert!(r.trimmed.notice().is_none());
    // No window known: nothing to fit to.
    let big = vec![Message::user(&"x".repeat(100_000)), reply("a")];
    assert_eq!(summary_request(&big, &ask, None, None, 1_024).trimmed, Trimmed::default());
}

#[test]
fn tool_outputs_are_cut_first_then_long_texts_oldest_first() {
    let long = "line of output 12345\n".repeat(200);
    let mut call = reply("");
    call.main_mut().tool_calls.push(crate::engine::message::ToolCall { id: "c1".into(), ..Default::default() });
    let msgs = vec![
        Message::user(&long),
        call,
        Message::tool_result("c1", &long),
        reply("done"),
        Message::user("and now?"),
        reply(&long),
    ];
    let ask = Message::user("Summarise.");
    let whole = summary_request(&msgs, &ask, None, None, 256);
    let r = summary_request(&msgs, &ask, None, Some(4_096), 256);
    assert_eq!(r.trimmed.outputs, 1, "{:?}", r.trimmed);
    assert!(r.messages[2].text().ends_with("more bytes cut to fit the summary request]"));
    assert!(r.messages[2].text().starts_with("line of output 12345"));
    assert!(estimated(&r) <= 4_096 * 9 / 10, "{} fits", estimated(&r));
    assert!(estimated(&whole) > 4_096, "it did not fit before: {}", estimated(&whole));
    // Smaller still: the oldest long texts go next, and the newest is cut last.
    let r = summary_request(&msgs, &ask, None, Some(2_000), 256);
    assert!(r.trimmed.texts >= 1 && r.trimmed.turns == 0, "{:?}", r.trimmed);
    assert!(r.messages[0].text().contains("cut to fit"));
    assert!(estimated(&r) <= 2_000 * 9 / 10);
    assert!(r.trimmed.notice().is_some_and(|n| n.contains("cut 1 tool output") && n.contains("long message")));
    // The conversation itself is untouched.
    assert_eq!(msgs[2].text(), long);
}

#[test]
fn the_last_resort_leaves_the_oldest_turns_out() {
    let para = "word ".repeat(300);
    let mut msgs = Vec::new();
    for _ in 0..8 {
        msgs.push(Message::user(&para));
        msgs.push(reply(&para));
    }
    let ask = Message::user("Summarise.");
    let r = summary_request(&msgs, &ask, None, Some(1_000), 250);
    assert!(r.trimmed.turns > 0, "{:?}", r.trimmed);
    assert_eq!(r.messages.first().map(|m| m.role()), Some(Role::User), "a request starts with a user turn");
    assert_eq!(r.messages.last().map(|m| m.text()), Some("Summarise."));
    assert!(estimated(&r) <= 900, "{}", estimated(&r));
    assert!(r.trimmed.notice().is_some_and(|n| n.contains("left the oldest")));
}

#[test]
fn failed_turns_and_thrown_away_summaries_are_never_sent() {
    let mut thrown = reply("half a summ");
    thrown.status = MessageStatus::Cancelled;
    thrown.compaction = Some(Compaction::default());
    let msgs = vec![
        Message::user("q1"),
        reply("a1"),
        Message::user("huge"),
        failed(),
        thrown,
        Message::user("q2"),
        reply("a2"),
    ];
    let ask = Message::user("Summarise.");
    let r = summary_request(&msgs, &ask, None, Some(4_096), 1_024);
    assert_eq!(texts(&r), ["q1", "a1", "q2", "a2", "Summarise."]);
    assert_eq!(r.trimmed.failed, 1);
}

#[test]
fn a_tiny_window_still_asks_for_what_room_there_is() {
    let msgs = vec![Message::user(&"word ".repeat(2_000)), reply("a")];
    let ask = Message::user("Summarise.");
    let r = summary_request(&msgs, &ask, None, Some(300), 1_024);
    assert_eq!(texts(&r), ["Summarise."], "everything else is left out");
    assert!(r.max_tokens < 300 && r.max_tokens >= 1, "{}", r.max_tokens);
    // A previous summary is sent as the user message it stands for.
    let mut s = reply("earlier summary");
    s.compaction = Some(Compaction { turns: 1, ..Compaction::default() });
    let msgs = vec![Message::user("q"), reply("a"), s, Message::user("q2"), reply("a2")];
    let r = summary_request(&msgs, &ask, None, Some(4_096), 1_024);
    assert_eq!(r.messages[0].text(), format!("{SUMMARY_HEADER}earlier summary"));
}
