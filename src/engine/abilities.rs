//! What the catalogue says a model takes, checked against what is about to be sent: an image
//! to a model that takes none, a PDF to one that reads none. A warning, not a refusal: the
//! catalogue may be behind the provider, and the user decides.

use super::attachment::Attachment;
use crate::config::Config;

/// The warning for sending `attachments` to `model`, when the catalogue (or config.toml) says
/// the model takes no images, or no PDFs, and one is attached. `None` when it takes them, or
/// nothing is known.
#[must_use]
pub fn unsupported_inputs(cfg: &Config, model: &str, attachments: &[Attachment]) -> Option<String> {
    if attachments.is_empty() {
        return None;
    }
    let facts = cfg.model_facts(model)?;
    let a = facts.abilities;
    let images = attachments.iter().filter(|x| x.is_image()).count();
    let pdfs = attachments.iter().filter(|x| !x.is_image() && x.media_type == "application/pdf").count();
    let mut what = Vec::new();
    if images > 0 && a.image == Some(false) {
        what.push(if images == 1 { "an image".to_owned() } else { format!("{images} images") });
    }
    if pdfs > 0 && a.pdf == Some(false) {
        what.push(if pdfs == 1 { "a PDF".to_owned() } else { format!("{pdfs} PDFs") });
    }
    if what.is_empty() {
        return None;
    }
    let kinds = if what.len() == 2 {
        "images or PDFs"
    } else if images > 0 && a.image == Some(false) {
        "images"
    } else {
        "PDFs"
    };
    let verb = if what.len() == 1 && images + pdfs == 1 { "is" } else { "are" };
    Some(format!(
        "{} {verb} attached, but the model catalogue says {model} takes no {kinds} ({}): the provider may \
         reject the request or ignore the attachment",
        what.join(" and "),
        facts.catalogue_key.as_deref().unwrap_or("config.toml"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Attachment {
        // The smallest PNG header the sniffer takes as an image.
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend_from_slice(&[0; 32]);
        Attachment::from_bytes("a.png", bytes).unwrap()
    }

    #[test]
    fn an_image_to_a_model_that_takes_none_is_warned_about() {
        let cfg = Config::default();
        // gpt-3.5-turbo: LiteLLM states no vision for it (by leaving supports_vision out).
        let w = unsupported_inputs(&cfg, "gpt-3.5-turbo", &[png()]).unwrap();
        assert!(w.starts_with("an image is attached") && w.contains("takes no images"), "{w}");
        assert_eq!(unsupported_inputs(&cfg, "gpt-4o-mini", &[png()]), None);
        assert_eq!(unsupported_inputs(&cfg, "a-model-nobody-knows", &[png()]), None);
        assert_eq!(unsupported_inputs(&cfg, "gpt-3.5-turbo", &[]), None);
    }
}
