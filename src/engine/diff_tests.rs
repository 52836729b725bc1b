//! Tests of the word diff: minimality against an LCS oracle, valid scripts after the
//! readability pass, spacing, and the work budget.

use super::*;

/// Rebuilds both sides from the script; checks it is a valid edit of `a` into `b`.
fn replay<T: PartialEq + Clone + std::fmt::Debug>(a: &[T], b: &[T], ops: &[Op]) -> usize {
    let (mut i, mut j, mut same) = (0, 0, 0);
    for op in ops {
        match *op {
            Op::Equal(n) => {
                assert_eq!(a[i..i + n], b[j..j + n]);
                i += n;
                j += n;
                same += n;
            }
            Op::Delete(n) => i += n,
            Op::Insert(n) => j += n,
        }
    }
    assert_eq!((i, j), (a.len(), b.len()), "the script must cover both sides");
    same
}

/// Length of the longest common subsequence, by dynamic programming.
fn lcs<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut prev = 0;
        for (j, y) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if x == y { prev + 1 } else { row[j + 1].max(row[j]) };
            prev = cur;
        }
    }
    row[b.len()]
}

/// A small deterministic generator (xorshift) so the property test needs no crate.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn minimal_on_random_inputs() {
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        let na = (rng(&mut seed) % 14) as usize;
        let nb = (rng(&mut seed) % 14) as usize;
        let alphabet = 1 + rng(&mut seed) % 4;
        let a: Vec<u64> = (0..na).map(|_| rng(&mut seed) % alphabet).collect();
        let b: Vec<u64> = (0..nb).map(|_| rng(&mut seed) % alphabet).collect();
        let ops = diff(&a, &b);
        assert_eq!(replay(&a, &b, &ops), lcs(&a, &b), "not minimal for {a:?} → {b:?}: {ops:?}");
    }
}

#[test]
fn readable_scripts_stay_valid_and_fold_stray_shared_words() {
    let mut seed = 0x1234_5678_9abc_def1;
    for _ in 0..1000 {
        let na = (rng(&mut seed) % 30) as usize;
        let nb = (rng(&mut seed) % 30) as usize;
        let a: Vec<u64> = (0..na).map(|_| rng(&mut seed) % 5).collect();
        let b: Vec<u64> = (0..nb).map(|_| rng(&mut seed) % 5).collect();
        let ops = readable(diff(&a, &b));
        replay(&a, &b, &ops);
    }
    let segs = words("so it looks the same every time", "I thought it over first: the reasoning");
    let kinds: Vec<Change> = segs.iter().map(|s| s.change).collect();
    assert_eq!(kinds, [Change::Removed, Change::Added], "{segs:?}");
    assert_eq!(segs[1].text, " I thought it over first: the reasoning");
}

#[test]
fn edge_cases() {
    let e: [u8; 0] = [];
    assert_eq!(diff(&e, &e), vec![]);
    assert_eq!(diff(&e, &[1u8, 2]), vec![Op::Insert(2)]);
    assert_eq!(diff(&[1u8, 2], &e), vec![Op::Delete(2)]);
    assert_eq!(diff(&[1u8, 2, 3], &[1, 2, 3]), vec![Op::Equal(3)]);
    assert_eq!(diff(&[1u8, 2, 3], &[1, 9, 3]), vec![Op::Equal(1), Op::Delete(1), Op::Insert(1), Op::Equal(1)]);
}

#[test]
fn word_segments_keep_spacing_and_lines() {
    let segs = words("The quick brown fox\njumps high", "The quick red fox\njumps  high today");
    let show: Vec<(Change, &str)> = segs.iter().map(|s| (s.change, s.text.as_str())).collect();
    assert_eq!(
        show,
        [
            (Change::Equal, "The quick"),
            (Change::Removed, " brown"),
            (Change::Added, " red"),
            (Change::Equal, " fox\njumps  high"),
            (Change::Added, " today"),
        ]
    );
    // Removing the removed runs gives the new text back; removing the added, the old.
    let new: String = segs.iter().filter(|s| s.change != Change::Removed).map(|s| s.text.as_str()).collect();
    assert_eq!(new, "The quick red fox\njumps  high today");
    let sim = similarity(&segs);
    assert!(sim > 0.7 && sim < 1.0, "{sim}");
}

#[test]
fn spacing_differences_are_not_changes() {
    let segs = words("a  b\tc", "a b c");
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].change, Change::Equal);
    assert!((similarity(&segs) - 1.0).abs() < f64::EPSILON);
}

#[test]
fn budget_caps_work_and_stays_correct() {
    // Two long, entirely different texts: with a tiny budget the result is still a valid
    // script (everything removed, everything added).
    let a: Vec<u32> = (0..20_000).collect();
    let b: Vec<u32> = (20_000..40_000).collect();
    let start = std::time::Instant::now();
    let ops = diff_with_budget(&a, &b, 10_000);
    assert_eq!(replay(&a, &b, &ops), 0);
    assert!(start.elapsed().as_millis() < 500);
    // Similar long texts stay cheap and exact: one word changed in 50,000.
    let mut c: Vec<u32> = (0..50_000).collect();
    c[25_000] = 99_999_999;
    let d: Vec<u32> = (0..50_000).collect();
    let ops = diff(&c, &d);
    assert_eq!(replay(&c, &d, &ops), 49_999);
}

#[test]
fn typical_answers_are_fast() {
    // Two 2,000-word answers sharing most of their vocabulary but in a different order.
    let words_a: Vec<String> = (0..2000).map(|i| format!("w{}", (i * 7) % 300)).collect();
    let words_b: Vec<String> = (0..2000).map(|i| format!("w{}", (i * 11) % 300)).collect();
    let (a, b) = (words_a.join(" "), words_b.join(" "));
    let start = std::time::Instant::now();
    let segs = words(&a, &b);
    assert!(!segs.is_empty());
    assert!(start.elapsed().as_millis() < 2000, "took {:?}", start.elapsed());
}
