//! The text measures some checks take: an edit distance bounded by what the check allows, word
//! and character counts, and whether an answer is a refusal.

const REFUSALS: &str = include_str!("../../../assets/evals/refusals.txt");

/// The Levenshtein distance (in characters) between `a` and `b` when it is at most `max`, else
/// `None`. Bounded so that a megabyte answer checked against a word costs what the word costs.
#[must_use]
pub fn levenshtein_within(a: &str, b: &str, max: usize) -> Option<usize> {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let swap = prev[j] + usize::from(ca != cb);
            row[j + 1] = swap.min(prev[j + 1] + 1).min(row[j] + 1);
        }
        if row.iter().min().is_some_and(|&m| m > max) {
            return None;
        }
        std::mem::swap(&mut prev, &mut row);
    }
    prev.last().copied().filter(|&d| d <= max)
}

/// Words: runs of characters between whitespace.
#[must_use]
pub fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Characters (not bytes) of the answer without the whitespace around it.
#[must_use]
pub fn chars(text: &str) -> usize {
    text.trim().chars().count()
}

/// Whether `answer` reads as a refusal: empty, or opening with (or holding, near its start) a
/// phrase of `assets/evals/refusals.txt`. `api_refusal`: the API said so in its own field.
#[must_use]
pub fn is_refusal(answer: &str, api_refusal: bool) -> bool {
    if api_refusal {
        return true;
    }
    let head: String = answer.trim().chars().take(300).flat_map(char::to_lowercase).collect();
    let head = head.replace('’', "'");
    head.is_empty() || phrases().any(|p| head.contains(p))
}

fn phrases() -> impl Iterator<Item = &'static str> {
    REFUSALS.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_is_bounded() {
        assert_eq!(levenshtein_within("kitten", "sitting", 3), Some(3));
        assert_eq!(levenshtein_within("kitten", "sitting", 2), None);
        assert_eq!(levenshtein_within("Paris", "Paris", 0), Some(0));
        assert_eq!(levenshtein_within("", "abc", 3), Some(3));
        assert_eq!(levenshtein_within("naïve", "naive", 1), Some(1));
        // A long answer is refused by its length alone.
        assert_eq!(levenshtein_within(&"x".repeat(1_000_000), "x", 5), None);
    }

    #[test]
    fn counts_and_refusals() {
        assert_eq!((words("  one two\n three "), chars(" héllo ")), (3, 5));
        assert!(is_refusal("I'm sorry, but I can't help with that.", false));
        assert!(is_refusal("I’m unable to share that.", false));
        assert!(is_refusal("", false));
        assert!(is_refusal("Sure", true));
        assert!(!is_refusal("Paris is the capital of France.", false));
        assert!(phrases().all(|p| p == p.to_lowercase()), "the phrases are compared lower-case");
    }
}
