//! Credential shapes in text: what a tool returned, what a search found or what an attachment
//! holds is looked at here before it goes to a provider. Only well-known shapes with a
//! recognisable prefix are found (private-key blocks, cloud and API keys, a password in a
//! URL), so ordinary prose and code do not trip it. It runs on every tool output, so each
//! shape starts from a literal found with `memchr`'s substring search and is checked only there.

use memchr::memmem;

/// One credential shape: the literal it starts with, what it is called, and the check of
/// what follows the literal (the text after it; true when the shape is complete).
struct Shape {
    prefix: &'static str,
    kind: &'static str,
    /// Whether a letter or digit may stand right before the prefix (no: `ghp_` inside a word).
    inside_word: bool,
    rest: fn(&str) -> bool,
}

const SHAPES: &[Shape] = &[
    Shape { prefix: "-----BEGIN ", kind: "a private key (PEM block)", inside_word: true, rest: pem_private },
    Shape { prefix: "AKIA", kind: "an AWS access key", inside_word: false, rest: aws_key },
    Shape { prefix: "ASIA", kind: "an AWS access key", inside_word: false, rest: aws_key },
    Shape { prefix: "ghp_", kind: "a GitHub token", inside_word: false, rest: github_classic },
    Shape { prefix: "gho_", kind: "a GitHub token", inside_word: false, rest: github_classic },
    Shape { prefix: "ghu_", kind: "a GitHub token", inside_word: false, rest: github_classic },
    Shape { prefix: "ghs_", kind: "a GitHub token", inside_word: false, rest: github_classic },
    Shape { prefix: "ghr_", kind: "a GitHub token", inside_word: false, rest: github_classic },
    Shape { prefix: "github_pat_", kind: "a GitHub token", inside_word: false, rest: github_fine },
    Shape { prefix: "glpat-", kind: "a GitLab token", inside_word: false, rest: gitlab },
    Shape { prefix: "sk-", kind: "an API key (sk-…)", inside_word: false, rest: openai_style },
    Shape { prefix: "xoxb-", kind: "a Slack token", inside_word: false, rest: slack },
    Shape { prefix: "xoxp-", kind: "a Slack token", inside_word: false, rest: slack },
    Shape { prefix: "xoxa-", kind: "a Slack token", inside_word: false, rest: slack },
    Shape { prefix: "xoxr-", kind: "a Slack token", inside_word: false, rest: slack },
    Shape { prefix: "xoxs-", kind: "a Slack token", inside_word: false, rest: slack },
    Shape { prefix: "AIza", kind: "a Google API key", inside_word: false, rest: google },
    Shape { prefix: "sk_live_", kind: "a Stripe secret key", inside_word: false, rest: stripe },
    Shape { prefix: "rk_live_", kind: "a Stripe secret key", inside_word: false, rest: stripe },
    Shape { prefix: "://", kind: "a password in a URL", inside_word: true, rest: |_| true },
];

/// The kinds of credential `text` holds, each named once, in the order of [`SHAPES`].
#[must_use]
pub fn find(text: &str) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for shape in SHAPES {
        if kinds.contains(&shape.kind) {
            continue;
        }
        let hit = memmem::find_iter(text.as_bytes(), shape.prefix.as_bytes()).any(|at| matches(text, at, shape));
        if hit {
            kinds.push(shape.kind);
        }
    }
    kinds
}

/// The kinds joined for a sentence: "a GitHub token and a private key (PEM block)".
#[must_use]
pub fn describe(kinds: &[&str]) -> String {
    match kinds {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn matches(text: &str, at: usize, shape: &Shape) -> bool {
    if shape.prefix == "://" {
        return url_password(text, at);
    }
    let before_ok = shape.inside_word
        || text[..at].chars().next_back().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    // Prefixes are ASCII, so the index after one is a char boundary.
    before_ok && (shape.rest)(&text[at + shape.prefix.len()..])
}

/// The run of characters at the start of `s` that `ok` accepts.
fn run(s: &str, ok: impl Fn(u8) -> bool) -> &str {
    let end = s.bytes().position(|b| !ok(b)).unwrap_or(s.len());
    &s[..end]
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `RSA PRIVATE KEY-----`, `OPENSSH PRIVATE KEY-----`, `PRIVATE KEY-----`, `PGP PRIVATE KEY BLOCK-----`.
fn pem_private(rest: &str) -> bool {
    let label = run(rest, |b| b.is_ascii_uppercase() || b == b' ' || b.is_ascii_digit());
    rest[label.len()..].starts_with("-----") && label.contains("PRIVATE KEY")
}

fn aws_key(rest: &str) -> bool {
    let body = run(rest, |b| b.is_ascii_uppercase() || b.is_ascii_digit());
    body.len() == 16
}

fn github_classic(rest: &str) -> bool {
    run(rest, alnum).len() >= 36
}

fn github_fine(rest: &str) -> bool {
    run(rest, |b| alnum(b) || b == b'_').len() >= 40
}

fn gitlab(rest: &str) -> bool {
    run(rest, token).len() >= 20
}

/// OpenAI-style keys (`sk-…`, `sk-proj-…`, `sk-ant-…`): a long run mixing letters and digits,
/// which words joined by hyphens (`sk-learn-style`) are not.
fn openai_style(rest: &str) -> bool {
    let body = run(rest, token);
    let digits = body.bytes().filter(u8::is_ascii_digit).count();
    let letters = body.bytes().filter(u8::is_ascii_alphabetic).count();
    body.len() >= 32 && digits >= 3 && letters >= 8
}

fn slack(rest: &str) -> bool {
    let body = run(rest, token);
    body.len() >= 10 && body.bytes().filter(u8::is_ascii_digit).count() >= 4
}

fn google(rest: &str) -> bool {
    run(rest, token).len() == 35
}

fn stripe(rest: &str) -> bool {
    run(rest, alnum).len() >= 16
}

/// `scheme://user:password@host`: a password that is not an obvious placeholder.
fn url_password(text: &str, at: usize) -> bool {
    let scheme = text[..at].bytes().rev().take_while(|b| b.is_ascii_alphanumeric() || b"+.-".contains(b)).count();
    if scheme == 0 {
        return false;
    }
    let after = &text[at + 3..];
    let authority = run(after, |b| !b" \t\r\n/?#\"'<>`".contains(&b));
    let Some(userinfo) = authority.rfind('@').map(|i| &authority[..i]) else { return false };
    let Some((user, password)) = userinfo.split_once(':') else { return false };
    !user.is_empty() && !password.is_empty() && !placeholder(password)
}

/// Passwords written as stand-ins in docs and examples.
fn placeholder(password: &str) -> bool {
    let p = password.to_ascii_lowercase();
    password.starts_with(['$', '{', '%', '*', '[', '('])
        || password.bytes().all(|b| b == b'*' || b == b'x' || b == b'X' || b == b'.')
        || ["password", "pass", "passwd", "pw", "secret", "token", "changeme"].contains(&p.as_str())
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;
