//! The terminal side of the app: the guard that takes and restores the terminal, the input task,
//! the frame scheduler, the external editor and the OSC 52 clipboard.

pub mod clipboard;
pub mod clipboard_image;
pub mod editor;
pub mod frame;
pub mod graphics;
pub mod input;
pub mod notify;
pub mod osc52;
pub mod terminal;
