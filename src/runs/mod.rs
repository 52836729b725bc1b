//! Runs: the headless turn loop, the recorder that stores a run as it goes, and the cells and
//! scheduler of a prompt set (or its batches, through the providers' batch APIs). Below the command line, which builds what a turn needs from its
//! flags ([`turn::Turn`]) and prints what the loop reports through a [`sink::TurnSink`]; the
//! loop itself neither parses flags nor writes to a terminal.

pub mod batch;
pub mod batch_cells;
pub mod cell;
mod conversation;
pub mod judge;
pub mod recorder;
pub mod scheduler;
pub mod script;
pub mod sink;
pub mod stop;
pub mod turn;
