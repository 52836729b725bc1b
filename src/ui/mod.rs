//! Pure drawing from `&State` plus a render cache; nothing here touches the network or disk.

pub mod markdown;
pub mod sanitize;
pub mod theme;
