#!/usr/bin/env node
// `codebase-index-mcp [--project PATH] [--config PATH]`: the MCP server over stdio, set up like the CLI.
import "./codebase-index.mjs";
