//! palaver: a terminal chat client for OpenAI-compatible LLM APIs.
//! The library exposes every layer so that tests and benches can drive them directly.

pub mod api;
pub mod engine;
pub mod config;
pub mod cli;
pub mod ui;
pub mod app;
pub mod tui;
pub mod tools;
pub mod store;
pub mod fuzzing;
