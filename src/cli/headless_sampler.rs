//! Sampling in a headless run: with `--yes` (the user approved everything up front), an MCP
//! server allowed to sample runs its request on the run's provider and model; a line on stderr
//! says which server used the model and the tokens it cost. Without `--yes` no sampler is set
//! and the request is refused with the reason.

use crate::engine::sampling;
use crate::engine::target::Target;
use crate::tools::mcp::sample::{SampleRequest, Sampler};
use std::sync::Arc;

/// The sampler of a headless `--yes` run on `t`.
#[must_use]
pub fn sampler(t: &Target, cfg: &crate::config::Config) -> Sampler {
    let t = Arc::new(t.clone());
    let max_output = cfg.model_facts(&t.model).and_then(|f| f.max_output);
    Arc::new(move |req: SampleRequest| {
        let t = t.clone();
        Box::pin(async move {
            if let Some(cut) = sampling::max_tokens(req.max_tokens, max_output).1 {
                say!("MCP server `{}`'s sampling request: {cut}", crate::text::sanitize::sanitize(&req.server));
            }
            let run = sampling::run(&t, max_output, &req).await?;
            say!("{}", sampling::notice(&req.server, &run));
            Ok(run.sampled)
        })
    })
}
