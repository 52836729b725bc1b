//! Comparing at scale, the pure parts: prompt sets read from a file (`prompts`), the checks a
//! prompt may carry (`expect`), templated prompts and their `vars` tables (`template`), figures
//! over many cells (`stats`), repeated samples' rates (`rates`), a cell's outcome and paired
//! tests of one run against another (`outcome`, `paired`), and ratings from arena votes
//! (`rating`). No I/O beyond the bytes handed in; the runner and the reports live in `cli`.

pub mod expect;
pub mod jinja;
pub mod judge;
pub mod outcome;
pub mod paired;
pub mod promptfoo;
pub mod prompts;
pub mod rates;
pub mod rating;
pub mod rating_style;
pub mod stats;
pub mod style;
pub mod template;
pub mod template_set;
pub mod text_checks;
pub mod tool_checks;
pub mod turns;
