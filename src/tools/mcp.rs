//! MCP servers over stdio. (Placeholder until the rmcp client lands.)

use super::{ToolOutput, ToolSpec};
use crate::config::McpServer;
use serde_json::{Map, Value};

/// A running MCP server connection.
#[derive(Debug)]
pub struct McpClient {
    name: String,
}

impl McpClient {
    /// Starts the server and lists its tools.
    ///
    /// # Errors
    /// When the server cannot be started or does not answer.
    pub async fn start(name: &str, _cfg: &McpServer) -> Result<(Self, Vec<ToolSpec>), String> {
        Err(format!("MCP support is not built yet (server `{name}`)"))
    }

    /// Calls a tool on the server.
    pub async fn call(&self, tool: &str, _args: Map<String, Value>) -> ToolOutput {
        ToolOutput::error(format!("MCP server `{}` cannot run `{tool}`", self.name))
    }
}
