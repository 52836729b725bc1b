//! palaver: a terminal chat client for OpenAI-compatible LLM APIs.
//! The library exposes every layer so that tests and benches can drive them directly.

pub mod api;
pub mod app;
pub mod cli;
pub mod config;
pub mod demo;
pub mod engine;
pub mod fuzzing;
pub mod interactive;
pub mod runs;
pub mod store;
pub mod sys;
pub mod text;
pub mod tools;
pub mod tui;
pub mod ui;
