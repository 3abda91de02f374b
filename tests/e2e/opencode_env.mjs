// The environment every end-to-end test runs the real OpenCode in: a fresh home (config, data, cache, state
// and temp all inside it), no update checks, model lists, sharing, LSP downloads or outside skills, an npm
// registry that refuses at once, and the fake model at `llmUrl`.
import path from "node:path";

export function opencodeEnv(home, llmUrl) {
  return {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, ".config"),
    XDG_DATA_HOME: path.join(home, ".local/share"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_STATE_HOME: path.join(home, ".local/state"),
    // The sidecar builds the int8 model in this fresh home and is stopped when the test ends, maybe
    // mid-build: onnxruntime's quantiser keeps scratch in the temp dir, so that lives in `home` too.
    TMPDIR: path.join(home, "tmp"),
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_SHARE: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
    OPENCODE_DISABLE_CLAUDE_CODE: "1",
    npm_config_registry: "http://127.0.0.1:9/",
    npm_config_fetch_retries: "0",
    FAKE_LLM_URL: llmUrl,
  };
}
