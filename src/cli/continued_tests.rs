use super::*;
use crate::engine::target::Change;

const CONFIG: &str = r#"
[providers.gemma]
base_url = "http://127.0.0.1:9101/v1"
models = ["gemma-3-270m"]
api = "responses"

[providers.smol]
base_url = "http://127.0.0.1:9102/v1"
models = ["smollm2"]
"#;

fn cfg() -> Config {
    Config::parse(CONFIG, std::path::Path::new("config.toml")).unwrap()
}

fn stored(provider: &str, url: Option<&str>, model: &str, api: &str) -> StoredTarget {
    StoredTarget {
        provider: Some(provider.into()),
        base_url: url.map(Into::into),
        model: Some(model.into()),
        api: Some(api.into()),
    }
}

async fn go(g: &Global, cfg: &Config, s: StoredTarget) -> Target {
    resolve_stored(g, cfg, "conv1".into(), s).await.unwrap()
}

fn changes(t: &Target) -> Vec<(&'static str, String, String)> {
    let c = t.continued.as_ref().unwrap();
    c.changes.iter().map(|Change { what, before, after, .. }| (*what, before.clone(), after.clone())).collect()
}

#[tokio::test]
async fn a_conversation_on_a_profile_continues_there_with_its_model_and_api() {
    let s = stored("gemma", Some("http://127.0.0.1:9101/v1"), "gemma-3-270m", "responses");
    let t = go(&Global::default(), &cfg(), s).await;
    assert_eq!((t.provider.as_str(), t.model.as_str(), t.api.name()), ("gemma", "gemma-3-270m", "responses"));
    assert_eq!(t.endpoint.base_url, "http://127.0.0.1:9101/v1");
    assert!(changes(&t).is_empty());
    assert_eq!(t.continued.as_ref().unwrap().notice(), None, "nothing to say when nothing changed");
}

#[tokio::test]
async fn the_default_provider_does_not_take_over_a_conversation_on_another() {
    let mut c = cfg();
    c.default_provider = Some("smol".into());
    let s = stored("gemma", Some("http://127.0.0.1:9101/v1"), "gemma-3-270m", "responses");
    let t = go(&Global::default(), &c, s).await;
    assert_eq!(t.provider, "gemma");
}

#[tokio::test]
async fn a_bare_base_url_conversation_goes_back_to_that_url_not_the_demo() {
    let s = stored("127.0.0.1", Some("http://127.0.0.1:9200/v1"), "SmolLM2-135M", "chat");
    let t = go(&Global::default(), &Config::default(), s).await;
    assert!(t.demo.is_none());
    assert_eq!(t.endpoint.base_url, "http://127.0.0.1:9200/v1");
    assert_eq!((t.provider.as_str(), t.model.as_str()), ("127.0.0.1", "SmolLM2-135M"));
    assert!(changes(&t).is_empty());
}

#[tokio::test]
async fn a_flag_overrides_and_is_named_before_and_after() {
    let s = stored("gemma", Some("http://127.0.0.1:9101/v1"), "gemma-3-270m", "responses");
    let g = Global { provider: Some("smol".into()), ..Global::default() };
    let t = go(&g, &cfg(), s.clone()).await;
    assert_eq!((t.provider.as_str(), t.model.as_str(), t.api.name()), ("smol", "smollm2", "chat"));
    let c = changes(&t);
    assert!(c.contains(&("provider", "gemma".into(), "smol".into())), "{c:?}");
    assert!(c.contains(&("base_url", "http://127.0.0.1:9101/v1".into(), "http://127.0.0.1:9102/v1".into())));
    assert!(c.contains(&("model", "gemma-3-270m".into(), "smollm2".into())));
    let notice = t.continued.as_ref().unwrap().notice().unwrap();
    assert!(notice.contains("provider gemma → smol (--provider)"), "{notice}");
    // -m alone keeps the provider and changes the model only.
    let g = Global { model: vec!["gemma-3-1b".into()], ..Global::default() };
    let t = go(&g, &cfg(), s.clone()).await;
    assert_eq!(changes(&t), vec![("model", "gemma-3-270m".into(), "gemma-3-1b".into())]);
    assert_eq!(t.continued.as_ref().unwrap().changes[0].why, "-m");
    // --base-url alone moves the address and keeps the profile and model.
    let g = Global { base_url: Some("http://127.0.0.1:9999/v1".into()), ..Global::default() };
    let t = go(&g, &cfg(), s.clone()).await;
    assert_eq!((t.provider.as_str(), t.model.as_str()), ("gemma", "gemma-3-270m"));
    assert_eq!(changes(&t), vec![("base_url", "http://127.0.0.1:9101/v1".into(), "http://127.0.0.1:9999/v1".into())]);
    // --api alone.
    let g = Global { api: Some(ApiArg::Chat), ..Global::default() };
    let t = go(&g, &cfg(), s).await;
    assert_eq!(changes(&t), vec![("api", "responses".into(), "chat".into())]);
}

#[tokio::test]
async fn a_provider_gone_from_the_config_goes_to_its_recorded_url_and_says_so() {
    let s = stored("gone", Some("http://127.0.0.1:9300/v1"), "m1", "chat");
    let t = go(&Global::default(), &cfg(), s).await;
    assert_eq!(t.endpoint.base_url, "http://127.0.0.1:9300/v1");
    assert_eq!(t.model, "m1");
    assert_eq!(changes(&t), vec![("provider", "gone".into(), "127.0.0.1".into())]);
    let notice = t.continued.as_ref().unwrap().notice().unwrap();
    assert!(notice.contains("`gone` is no longer a provider in config.toml"), "{notice}");
}

#[tokio::test]
async fn a_provider_gone_without_a_recorded_url_takes_the_configured_one_and_says_so() {
    let mut c = cfg();
    c.default_provider = Some("smol".into());
    let s = stored("gone", None, "m1", "chat");
    let t = go(&Global::default(), &c, s).await;
    assert_eq!((t.provider.as_str(), t.model.as_str()), ("smol", "smollm2"));
    let c = changes(&t);
    assert!(c.contains(&("provider", "gone".into(), "smol".into())), "{c:?}");
    assert!(c.contains(&("model", "m1".into(), "smollm2".into())), "{c:?}");
    // Several providers and no default: the same error as a fresh run.
    let s = stored("gone", None, "m1", "chat");
    let e = resolve_stored(&Global::default(), &cfg(), "c".into(), s).await.err().unwrap();
    assert!(e.0.contains("gemma, smol") && e.0.contains("no default_provider"), "{}", e.0);
}

#[tokio::test]
async fn a_demo_conversation_stays_on_the_demo() {
    let s = StoredTarget { provider: Some("demo".into()), base_url: None, model: Some("demo-tools".into()), api: None };
    let t = go(&Global::default(), &cfg(), s).await;
    assert!(t.demo.is_some());
    assert_eq!((t.provider.as_str(), t.model.as_str()), ("demo", "demo-tools"));
    assert!(changes(&t).is_empty());
    // Providers are configured now: it stays, and the notice says so.
    let notice = t.continued.as_ref().and_then(Continued::notice).unwrap();
    assert!(notice.contains("built-in demo provider") && notice.contains("--provider NAME"), "{notice}");
    // --demo asked for it: nothing to say.
    let s = StoredTarget { provider: Some("demo".into()), ..StoredTarget::default() };
    let t = go(&Global { demo: true, ..Global::default() }, &cfg(), s).await;
    assert_eq!(t.continued.as_ref().and_then(Continued::notice), None);
}

#[tokio::test]
async fn a_profile_whose_url_moved_keeps_the_conversation_where_it_was_and_says_so() {
    let s = stored("gemma", Some("http://127.0.0.1:9100/v1"), "gemma-3-270m", "responses");
    let t = go(&Global::default(), &cfg(), s.clone()).await;
    assert_eq!(t.endpoint.base_url, "http://127.0.0.1:9100/v1");
    assert_eq!(t.provider, "gemma");
    let notice = t.continued.as_ref().unwrap().notice().unwrap();
    assert!(notice.contains("providers.gemma.base_url is now http://127.0.0.1:9101/v1"), "{notice}");
    // --provider gemma: the profile as configured.
    let g = Global { provider: Some("gemma".into()), ..Global::default() };
    let t = go(&g, &cfg(), s).await;
    assert_eq!(t.endpoint.base_url, "http://127.0.0.1:9101/v1");
    assert_eq!(t.model, "gemma-3-270m", "the same provider keeps its model");
}

#[tokio::test]
async fn a_password_in_a_profile_url_is_used_but_never_recorded() {
    let text = "[providers.p]\nbase_url = \"http://u:hunter2-pass@127.0.0.1:9400/v1\"\n";
    let c = Config::parse(text, std::path::Path::new("c")).unwrap();
    let s = stored("p", Some("http://127.0.0.1:9400/v1"), "m", "chat");
    let t = go(&Global::default(), &c, s).await;
    assert_eq!(t.endpoint.base_url, "http://u:hunter2-pass@127.0.0.1:9400/v1", "the profile's own URL");
    assert_eq!(t.storable_base_url().as_deref(), Some("http://127.0.0.1:9400/v1"));
    assert!(changes(&t).is_empty());
    assert!(!t.continued.as_ref().unwrap().json().to_string().contains("hunter2"));
}
