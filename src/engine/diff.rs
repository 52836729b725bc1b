//! Word-level diff of two answers, for the compare screen's diff view. Pure: text in, runs of
//! equal / removed / added text out. Words and line breaks are compared; the spaces between
//! words are carried along for display but never make two words differ.
//!
//! The core is Myers' O((N+M)·D) algorithm in linear space (the "middle snake" bisection), after
//! trimming the common prefix and suffix, so two similar answers cost little. A work budget
//! caps huge or very different inputs: once it is spent, what is left of a sub-problem is
//! reported as removed-then-added, which is still a correct (if not minimal) diff.

/// What a run of text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// In both texts.
    Equal,
    /// Only in the first (old) text.
    Removed,
    /// Only in the second (new) text.
    Added,
}

/// A run of consecutive tokens with the same change, as display text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub change: Change,
    pub text: String,
}

/// An edit over token indices: `Equal(n)` keeps n tokens of both, `Delete(n)` drops n of the
/// first, `Insert(n)` takes n of the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Equal(usize),
    Delete(usize),
    Insert(usize),
}

/// Default work budget (snake steps) for one diff: about a few milliseconds of work.
pub const DEFAULT_BUDGET: usize = 4_000_000;

/// A token of text: a word or a line break, with the spacing before it (kept for display).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Token<'a> {
    space: &'a str,
    word: &'a str,
}

/// Splits text into words and line breaks; each token remembers the spaces before it.
fn tokenize(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut space_start = 0;
    let mut i = 0;
    while i < text.len() {
        let c = text[i..].chars().next().unwrap_or(' ');
        if c == '\n' {
            out.push(Token { space: &text[space_start..i], word: "\n" });
            i += 1;
            space_start = i;
        } else if c.is_whitespace() {
            i += c.len_utf8();
        } else {
            let start = i;
            while i < text.len() {
                let c = text[i..].chars().next().unwrap_or(' ');
                if c.is_whitespace() {
                    break;
                }
                i += c.len_utf8();
            }
            out.push(Token { space: &text[space_start..start], word: &text[start..i] });
            space_start = i;
        }
    }
    out
}

/// The word diff of `old` against `new`, as display segments in reading order (a removed run
/// comes before the added run that replaces it).
#[must_use]
pub fn words(old: &str, new: &str) -> Vec<Segment> {
    words_with_budget(old, new, DEFAULT_BUDGET)
}

/// As `words`, with an explicit work budget.
#[must_use]
pub fn words_with_budget(old: &str, new: &str, budget: usize) -> Vec<Segment> {
    let a = tokenize(old);
    let b = tokenize(new);
    // Words become small integers first, so the search compares numbers, not strings.
    let mut ids: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut ka = Vec::with_capacity(a.len());
    let mut kb = Vec::with_capacity(b.len());
    for (tokens, keys) in [(&a, &mut ka), (&b, &mut kb)] {
        for t in tokens {
            let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
            keys.push(*ids.entry(t.word).or_insert(next));
        }
    }
    let ops = readable(diff_with_budget(&ka, &kb, budget));
    let mut out: Vec<Segment> = Vec::new();
    let mut push = |change: Change, tokens: &[Token<'_>]| {
        for t in tokens {
            let mut piece = String::with_capacity(t.space.len() + t.word.len());
            // The first token of the output needs no spacing before it; a line break drops
            // the trailing spaces of its line. A word that starts a line on one side and
            // follows a word of the other side gets a space, so the two never run together.
            if let Some(last) = out.last().filter(|_| t.word != "\n") {
                let joins = t.space.is_empty()
                    && last.change != change
                    && !last.text.ends_with(char::is_whitespace)
                    && (last.change != Change::Equal || change != Change::Equal);
                piece.push_str(if joins { " " } else { t.space });
            }
            piece.push_str(t.word);
            match out.last_mut() {
                Some(last) if last.change == change => last.text.push_str(&piece),
                _ => out.push(Segment { change, text: piece }),
            }
        }
    };
    let (mut i, mut j) = (0, 0);
    for op in ops {
        match op {
            Op::Equal(n) => {
                // Show the new text's spacing for words both sides share.
                push(Change::Equal, &b[j..j + n]);
                i += n;
                j += n;
            }
            Op::Delete(n) => {
                push(Change::Removed, &a[i..i + n]);
                i += n;
            }
            Op::Insert(n) => {
                push(Change::Added, &b[j..j + n]);
                j += n;
            }
        }
    }
    out
}

/// Makes a minimal script easier to read: a short run of shared words between two changes
/// (a lone "the" or "it" that two different sentences happen to share) is folded into the
/// changes around it, so whole phrases show as removed and added instead of confetti. A shared
/// run stays when it is longer than the changes on either side of it.
#[must_use]
pub fn readable(ops: Vec<Op>) -> Vec<Op> {
    let mut ops = merge(ops);
    // Each pass folds every run that qualifies; folding can make a neighbour qualify, so a few
    // passes settle it (bounded, so a pathological input cannot loop for long).
    for _ in 0..32 {
        let mut changed = false;
        let mut out: Vec<Op> = Vec::with_capacity(ops.len());
        let mut i = 0;
        while i < ops.len() {
            if let Op::Equal(n) = ops[i] {
                let before = change_len(&ops[..i], true);
                let after = change_len(&ops[i + 1..], false);
                if before > 0 && after > 0 && n <= before && n <= after {
                    out.push(Op::Delete(n));
                    out.push(Op::Insert(n));
                    changed = true;
                    i += 1;
                    continue;
                }
            }
            out.push(ops[i]);
            i += 1;
        }
        ops = merge(out);
        if !changed {
            break;
        }
    }
    ops
}

/// The larger side (deleted or inserted tokens) of the change group next to a shared run:
/// the ops just before it (`back`) or just after it.
fn change_len(ops: &[Op], back: bool) -> usize {
    let (mut del, mut ins) = (0, 0);
    let mut count = |op: &Op| match *op {
        Op::Delete(n) => {
            del += n;
            true
        }
        Op::Insert(n) => {
            ins += n;
            true
        }
        Op::Equal(_) => false,
    };
    if back {
        for op in ops.iter().rev() {
            if !count(op) {
                break;
            }
        }
    } else {
        for op in ops {
            if !count(op) {
                break;
            }
        }
    }
    del.max(ins)
}

/// Share of tokens the two texts have in common (0.0–1.0), from a segment list.
#[must_use]
pub fn similarity(segments: &[Segment]) -> f64 {
    let mut same = 0usize;
    let mut total = 0usize;
    for s in segments {
        let n = s.text.split_whitespace().count();
        match s.change {
            Change::Equal => {
                same += 2 * n;
                total += 2 * n;
            }
            Change::Removed | Change::Added => total += n,
        }
    }
    if total == 0 {
        return 1.0;
    }
    #[allow(clippy::cast_precision_loss)]
    let r = same as f64 / total as f64;
    r
}

/// The shortest edit script turning `a` into `b`, within the default budget.
#[must_use]
pub fn diff<T: PartialEq>(a: &[T], b: &[T]) -> Vec<Op> {
    diff_with_budget(a, b, DEFAULT_BUDGET)
}

/// The edit script turning `a` into `b`. Minimal while the budget lasts; past it, what is left
/// of a sub-problem is a delete of its `a` part and an insert of its `b` part.
#[must_use]
pub fn diff_with_budget<T: PartialEq>(a: &[T], b: &[T], budget: usize) -> Vec<Op> {
    let mut d = Differ { a, b, budget, ops: Vec::new() };
    d.run(0, a.len(), 0, b.len());
    merge(d.ops)
}

struct Differ<'a, T> {
    a: &'a [T],
    b: &'a [T],
    /// Snake steps left before falling back to delete-and-insert.
    budget: usize,
    ops: Vec<Op>,
}

impl<T: PartialEq> Differ<'_, T> {
    /// Diffs `a[a0..a1]` against `b[b0..b1]`, appending ops in order.
    fn run(&mut self, mut a0: usize, mut a1: usize, mut b0: usize, mut b1: usize) {
        // Common prefix and suffix cost nothing to report.
        let mut prefix = 0;
        while a0 < a1 && b0 < b1 && self.a[a0] == self.b[b0] {
            a0 += 1;
            b0 += 1;
            prefix += 1;
        }
        let mut suffix = 0;
        while a0 < a1 && b0 < b1 && self.a[a1 - 1] == self.b[b1 - 1] {
            a1 -= 1;
            b1 -= 1;
            suffix += 1;
        }
        self.ops.push(Op::Equal(prefix));
        let (n, m) = (a1 - a0, b1 - b0);
        if n == 0 || m == 0 {
            self.ops.push(Op::Delete(n));
            self.ops.push(Op::Insert(m));
        } else if let Some((x, y)) = self.middle_snake(a0, a1, b0, b1) {
            self.run(a0, x, b0, y);
            self.run(x, a1, y, b1);
        } else {
            self.ops.push(Op::Delete(n));
            self.ops.push(Op::Insert(m));
        }
        self.ops.push(Op::Equal(suffix));
    }

    /// Finds a point (x, y) on an optimal path through the sub-problem by running the forward
    /// and reverse searches until they overlap. `None` when the budget runs out first.
    #[allow(clippy::cast_possible_wrap, clippy::cast_sign_loss, clippy::cast_possible_truncation)]
    fn middle_snake(&mut self, a0: usize, a1: usize, b0: usize, b1: usize) -> Option<(usize, usize)> {
        let (n, m) = ((a1 - a0) as isize, (b1 - b0) as isize);
        let max_d = (n + m + 1) / 2;
        let offset = max_d;
        let len = (2 * max_d + 2) as usize;
        let mut v1 = vec![-1isize; len];
        let mut v2 = vec![-1isize; len];
        v1[(offset + 1) as usize] = 0;
        v2[(offset + 1) as usize] = 0;
        let delta = n - m;
        // With an odd delta the forward search meets the reverse one; with an even, the reverse.
        let front = delta % 2 != 0;
        let (mut k1start, mut k1end, mut k2start, mut k2end) = (0isize, 0isize, 0isize, 0isize);
        let a = |i: isize| &self.a[a0 + i as usize];
        let b = |j: isize| &self.b[b0 + j as usize];
        let mut spent = 0usize;
        for d in 0..max_d {
            if spent > self.budget {
                self.budget = 0;
                return None;
            }
            let mut k1 = -d + k1start;
            while k1 <= d - k1end {
                let k1o = (offset + k1) as usize;
                let mut x1 =
                    if k1 == -d || (k1 != d && v1[k1o - 1] < v1[k1o + 1]) { v1[k1o + 1] } else { v1[k1o - 1] + 1 };
                let mut y1 = x1 - k1;
                while x1 < n && y1 < m && a(x1) == b(y1) {
                    x1 += 1;
                    y1 += 1;
                    spent += 1;
                }
                spent += 1;
                v1[k1o] = x1;
                if x1 > n {
                    k1end += 2;
                } else if y1 > m {
                    k1start += 2;
                } else if front {
                    let k2o = offset + delta - k1;
                    if k2o >= 0 && (k2o as usize) < len && v2[k2o as usize] != -1 {
                        let x2 = n - v2[k2o as usize];
                        if x1 >= x2 {
                            self.budget = self.budget.saturating_sub(spent);
                            return Some((a0 + x1 as usize, b0 + y1 as usize));
                        }
                    }
                }
                k1 += 2;
            }
            let mut k2 = -d + k2start;
            while k2 <= d - k2end {
                let k2o = (offset + k2) as usize;
                let mut x2 =
                    if k2 == -d || (k2 != d && v2[k2o - 1] < v2[k2o + 1]) { v2[k2o + 1] } else { v2[k2o - 1] + 1 };
                let mut y2 = x2 - k2;
                while x2 < n && y2 < m && a(n - x2 - 1) == b(m - y2 - 1) {
                    x2 += 1;
                    y2 += 1;
                    spent += 1;
                }
                spent += 1;
                v2[k2o] = x2;
                if x2 > n {
                    k2end += 2;
                } else if y2 > m {
                    k2start += 2;
                } else if !front {
                    let k1o = offset + delta - k2;
                    if k1o >= 0 && (k1o as usize) < len && v1[k1o as usize] != -1 {
                        let x1 = v1[k1o as usize];
                        let y1 = offset + x1 - k1o;
                        if x1 >= n - x2 {
                            self.budget = self.budget.saturating_sub(spent);
                            return Some((a0 + x1 as usize, b0 + y1 as usize));
                        }
                    }
                }
                k2 += 2;
            }
        }
        self.budget = self.budget.saturating_sub(spent);
        None
    }
}

/// Drops empty ops and joins neighbours of the same kind; within a change, deletes come first.
fn merge(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    let (mut del, mut ins) = (0usize, 0usize);
    let flush = |out: &mut Vec<Op>, del: &mut usize, ins: &mut usize| {
        if *del > 0 {
            out.push(Op::Delete(*del));
        }
        if *ins > 0 {
            out.push(Op::Insert(*ins));
        }
        *del = 0;
        *ins = 0;
    };
    for op in ops {
        match op {
            Op::Equal(0) | Op::Delete(0) | Op::Insert(0) => {}
            Op::Delete(n) => del += n,
            Op::Insert(n) => ins += n,
            Op::Equal(n) => {
                flush(&mut out, &mut del, &mut ins);
                match out.last_mut() {
                    Some(Op::Equal(m)) => *m += n,
                    _ => out.push(Op::Equal(n)),
                }
            }
        }
    }
    flush(&mut out, &mut del, &mut ins);
    out
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
