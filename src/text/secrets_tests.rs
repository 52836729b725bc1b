//! The credential scanner: each shape is found, and ordinary prose and code are not flagged.

use super::{describe, find};

// Built at run time so this file does not itself hold a credential shape.
fn rep(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

#[test]
fn each_shape_is_found() {
    let mixed = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
    let cases = [
        (format!("x\n-----BEGIN {}PRIVATE KEY-----\nMIIE\n", "RSA "), "a private key (PEM block)"),
        (format!("-----BEGIN {} PRIVATE KEY-----", "OPENSSH"), "a private key (PEM block)"),
        (format!("-----BEGIN {}-----", "PRIVATE KEY"), "a private key (PEM block)"),
        (format!("-----BEGIN {}-----", "PGP PRIVATE KEY BLOCK"), "a private key (PEM block)"),
        (format!("aws_access_key_id = AKIA{}", "IOSFODNN7EXAMPLE"), "an AWS access key"),
        (format!("token: ghp_{}", &mixed[..36]), "a GitHub token"),
        (format!("github_pat_{}", rep('A', 22) + "_" + &rep('b', 59)), "a GitHub token"),
        (format!("glpat-{}", &mixed[..20]), "a GitLab token"),
        (format!("OPENAI_API_KEY=sk-proj-{mixed}"), "an API key (sk-…)"),
        (format!("xoxb-{}-{}", "123456789012", "abcdefABCDEF"), "a Slack token"),
        (format!("key=AIza{}", &(mixed.to_owned() + mixed)[..35]), "a Google API key"),
        (format!("sk_live_{}", &mixed[..24]), "a Stripe secret key"),
        ("DATABASE_URL=postgres://admin:hunter2@db.example.com/app".to_owned(), "a password in a URL"),
    ];
    for (text, kind) in cases {
        assert_eq!(find(&text), vec![kind], "{text}");
    }
}

#[test]
fn several_kinds_are_named_once_each() {
    let text = format!("ghp_{0} ghp_{0} https://u:p4ss@h/ -----BEGIN {1}-----", rep('a', 36), "EC PRIVATE KEY");
    let kinds = find(&text);
    assert_eq!(kinds, vec!["a private key (PEM block)", "a GitHub token", "a password in a URL"]);
    assert_eq!(describe(&kinds), "a private key (PEM block), a GitHub token and a password in a URL");
    assert_eq!(describe(&kinds[..1]), "a private key (PEM block)");
}

#[test]
fn ordinary_text_and_code_are_not_flagged() {
    let samples = [
        "The task-runner uses sk-learn style names and a risk-free plan.",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA user@host",
        "git clone git@github.com:owner/repo.git && curl https://example.com/a:b@c",
        "https://user:${PASSWORD}@host/ and https://user:****@host and https://u:password@h",
        "see https://docs.rs/memchr and http://localhost:8080/v1?x=a@b",
        "let ghp_count = 3; // not a token",
        "AKIAshort and MASIAXXXXXXXXXXXXXXXXX and AIzaTooShort",
        "fn main() { let sk = \"sk-\"; println!(\"{sk}\"); }",
        "xoxb-not-a-token",
    ];
    for s in samples {
        assert_eq!(find(s), Vec::<&str>::new(), "{s}");
    }
    // A whole real document: this project's own README and design.
    for doc in [include_str!("../../README.md"), include_str!("../tools/workspace.rs")] {
        assert_eq!(find(doc), Vec::<&str>::new());
    }
}

#[test]
fn big_outputs_are_scanned_quickly() {
    let big = "ordinary line of output with sk- and :// and AKIA in it\n".repeat(20_000);
    let started = std::time::Instant::now();
    assert!(find(&big).is_empty());
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
}
