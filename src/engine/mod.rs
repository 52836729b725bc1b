//! The conversation model and its reducer, and the turn runner that drives `api` (and later
//! tools) through a turn. Nothing here knows a terminal.

pub mod message;
pub mod reducer;
pub mod safety;
pub mod usage;

pub use message::{Choice, Conversation, ErrorInfo, Message, MessageStatus, Role, ToolCall, ToolStatus};
pub mod abilities;
pub mod attach_load;
pub mod attach_wire;
pub mod attachment;
pub mod body;
pub mod compact;
pub mod compact_fit;
pub mod diff;
pub mod evals;
pub mod images;
pub mod logprobs;
pub mod metrics;
pub mod request;
pub mod sampling;
pub mod save_pace;
pub mod sendback;
pub mod structured;
pub mod structured_short;
pub mod target;
pub mod tool_loop;
pub mod tools_ignored;
pub mod turn;
pub mod turn_engine;
