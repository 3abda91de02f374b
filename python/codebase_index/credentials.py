"""Files that hold secrets: never indexed by default, so they never reach an answer or a remote provider.

Discovery skips them by name (reason "secret", counted and named in status); the indexer skips a file
whose text holds a private key or a cloud credential the same way. Only the `includeSecrets` setting
brings one back, and that setting needs trust (config.TRUST_KEYS): a cloned repository cannot ask for
its own secret files to be sent to a provider.

Names are matched on the file name, except a few well-known paths (a Docker client's `config.json`).
Content markers are shapes that are credentials by construction, not guesses: PEM private-key blocks with
a body (a Google service-account key holds one in its "private_key"), and the fixed prefixes of AWS,
GitHub, Slack and Stripe secrets. AWS's documented example key (it ends in EXAMPLE) is not a credential,
nor is a PEM header on its own (parsers' docs and tests name it).
"""

from __future__ import annotations

import re

SECRET_FILE_NAMES = frozenset(
    {
        "credentials",  # ~/.aws/credentials, gcloud's
        "credentials.json",
        "credentials.yaml",
        "credentials.yml",
        "credentials.toml",
        "credentials.xml",
        "secrets.json",
        "secrets.yaml",
        "secrets.yml",
        "secrets.toml",
        "secrets.env",
        ".secrets",
        ".secrets.json",
        ".secrets.yaml",
        ".secrets.yml",
        ".secrets.toml",
        "service-account.json",
        "service_account.json",
        "serviceaccount.json",
        "serviceAccountKey.json",
        "api_key.txt",
        "api-key.txt",
        "apikey.txt",
        "api_keys.txt",
        "env.sh",
        ".envrc",
        ".netrc",
        "_netrc",
        ".git-credentials",
        ".pgpass",
        ".my.cnf",
        ".htpasswd",
        ".pypirc",
        ".vault-token",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "terraform.tfstate",
        "terraform.tfstate.backup",
    }
)
SECRET_NAME_PREFIXES = ("client_secret",)  # Google OAuth client files: client_secret_<id>.json
SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".ppk", ".tfstate")
SECRET_PATHS = (".docker/config.json",)  # a name that is a secret only at this place


def secret_name(name: str, rel_path: str) -> str | None:
    """Why a file is a secret by its name (`name` is the last part of `rel_path`), or None.

    >>> secret_name("client_secret_123.apps.json", "auth/client_secret_123.apps.json")
    'credential file name'
    >>> secret_name("config.json", "web/config.json") is None
    True
    """
    if name in SECRET_FILE_NAMES or name.startswith(SECRET_NAME_PREFIXES) or name.endswith(SECRET_SUFFIXES):
        return "credential file name"
    if name == "config.json" and (rel_path == SECRET_PATHS[0] or rel_path.endswith("/" + SECRET_PATHS[0])):
        return "credential file name (Docker client config)"
    return None


# Literal pieces one of which every marker contains: a text with none of them is skipped in one pass.
_PREFILTER = re.compile(r"PRIVATE KEY|AKIA|ASIA|gh[pousr]_|github_pat_|xox[abprs]-|sk_live_")
_MARKERS = (
    # A header alone is documentation or a parser's test; a key has a body: optional header lines
    # (Proc-Type, DEK-Info), then at least three lines of base64, separated by newlines or, inside a JSON
    # string (a service-account key's "private_key"), by `\n` escapes.
    (
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:\s|\\n)+"
            r"(?:(?:Proc-Type|DEK-Info):[^\n\\]*(?:\s|\\n)+)*(?:[A-Za-z0-9+/=]{40,}(?:\s|\\n)+){3}"
        ),
        "a PEM private key",
    ),
    (re.compile(r"\b(?:AKIA|ASIA)(?![0-9A-Z]{9}EXAMPLE)[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{60,})\b"), "a GitHub token"),
    (re.compile(r"\bxox[abprs]-[0-9A-Za-z-]{10,}"), "a Slack token"),
    (re.compile(r"\bsk_live_[0-9A-Za-z]{24,}"), "a Stripe secret key"),
)


def secret_content(text: str) -> str | None:
    """Why a file's text is a secret (what it holds), or None.

    >>> secret_content("key = 'AKIAIOSFODNN7EXAMPLE'") is None
    True
    >>> head = "-----BEGIN OPENSSH " + "PRIVATE KEY-----"
    >>> secret_content(head + " (the header alone is not a key)") is None
    True
    >>> secret_content(head + "\\n" + ("b3BlbnNzaC1rZXktdjEAAAAA" * 3 + "\\n") * 3)
    'holds a PEM private key'
    """
    if _PREFILTER.search(text) is None:
        return None
    for pattern, what in _MARKERS:
        if pattern.search(text) is not None:
            return f"holds {what}"
    return None
