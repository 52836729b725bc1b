//! The list's rows with compares in them: a compare is one row whose columns show under it when
//! expanded (→) and hide again (←). The selection walks the lines as shown: rows, and the
//! columns of expanded compares.

use super::{ConversationList, HitRow, ListAction, Row};
use crate::app::conversations::ColumnRow;
use crate::store::ConversationSummary;
use crate::store::entries::ListEntry;
use crate::store::ids::short_date;

/// What the selection points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selected<'a> {
    /// A search hit.
    Hit(&'a HitRow),
    /// A conversation, or a compare as a whole.
    Row(&'a Row),
    /// One column of a compare.
    Column(&'a Row, &'a ColumnRow),
}

impl From<ListEntry> for Row {
    fn from(e: ListEntry) -> Self {
        let n = e.columns.len();
        let model = if e.is_compare() {
            format!("compare · {n} model{}", if n == 1 { "" } else { "s" })
        } else {
            e.model.unwrap_or_default()
        };
        let columns = e.columns.into_iter().enumerate().map(|(i, c)| ColumnRow::from_summary(i, c)).collect();
        Self { date: short_date(e.updated_at), model, id: e.id, title: e.title, messages: e.messages, columns }
    }
}

impl ColumnRow {
    fn from_summary(i: usize, c: ConversationSummary) -> Self {
        Self {
            number: c.compare_column.unwrap_or(u32::try_from(i).unwrap_or(u32::MAX)).saturating_add(1),
            date: short_date(c.updated_at),
            model: c.model.unwrap_or_default(),
            id: c.id,
            title: c.title,
            messages: c.messages,
        }
    }
}

/// The model shown for a column while its compare hides its models (an arena before the vote).
pub const HIDDEN_MODEL: &str = "hidden until the vote";

impl ConversationList {
    /// The lines of the list as shown: (row, column) with `None` for the row itself.
    #[must_use]
    pub fn lines(&self) -> Vec<(usize, Option<usize>)> {
        let mut out = Vec::with_capacity(self.rows.len());
        for (i, r) in self.rows.iter().enumerate() {
            out.push((i, None));
            if r.is_compare() && self.expanded.contains(&r.id) {
                out.extend((0..r.columns.len()).map(|c| (i, Some(c))));
            }
        }
        out
    }

    /// The selected entry.
    #[must_use]
    pub fn selected_entry(&self) -> Option<Selected<'_>> {
        if self.searching_mode() {
            return self.hits.get(self.selected).map(Selected::Hit);
        }
        let (row, column) = *self.lines().get(self.selected)?;
        let r = self.rows.get(row)?;
        match column {
            None => Some(Selected::Row(r)),
            Some(c) => r.columns.get(c).map(|c| Selected::Column(r, c)),
        }
    }

    /// The conversation ids the selection stands for: a compare's every column.
    #[must_use]
    pub fn selected_ids(&self) -> Vec<String> {
        match self.selected_entry() {
            Some(Selected::Row(r)) if r.is_compare() => r.columns.iter().map(|c| c.id.clone()).collect(),
            Some(Selected::Row(r)) => vec![r.id.clone()],
            Some(Selected::Column(_, c)) => vec![c.id.clone()],
            Some(Selected::Hit(h)) => vec![h.id.clone()],
            None => Vec::new(),
        }
    }

    /// Whether the selection is the compare open on the compare screen, or one of its columns.
    #[must_use]
    pub fn in_open_compare(&self) -> bool {
        let open = |r: &Row| self.current_group.as_deref() == Some(r.id.as_str());
        matches!(self.selected_entry(), Some(Selected::Row(r) | Selected::Column(r, _)) if open(r))
    }

    /// New titles for conversations `ids` wherever they show (a compare takes its first column's).
    pub(crate) fn retitle(&mut self, ids: &[String], title: &str) {
        for r in &mut self.rows {
            if ids.contains(&r.id) {
                r.title = title.to_owned();
            }
            for c in r.columns.iter_mut().filter(|c| ids.contains(&c.id)) {
                c.title = title.to_owned();
            }
            if let Some(first) = r.columns.first() {
                r.title.clone_from(&first.title);
            }
        }
        for h in self.hits.iter_mut().filter(|h| ids.contains(&h.id)) {
            h.title = title.to_owned();
        }
    }

    /// Removes a deleted conversation, compare (by group id) or column from the rows and hits.
    pub fn forget(&mut self, id: &str) {
        let mut gone: Vec<String> = vec![id.to_owned()];
        if let Some(r) = self.rows.iter().find(|r| r.id == id) {
            gone.extend(r.columns.iter().map(|c| c.id.clone()));
        }
        self.rows.retain_mut(|r| {
            if r.id == id {
                return false;
            }
            if !r.is_compare() {
                return true;
            }
            r.columns.retain(|c| c.id != id);
            r.messages = r.columns.iter().map(|c| c.messages).sum();
            // A compare whose last column went is gone too.
            !r.columns.is_empty()
        });
        self.hits.retain(|h| !gone.contains(&h.id));
        if self.current.as_ref().is_some_and(|c| gone.contains(c)) {
            self.current = None;
        }
        self.expanded.remove(id);
        self.clamp();
    }

    /// Masks the models of the compare whose names are hidden.
    pub(crate) fn hide_models(&mut self) {
        let Some(group) = self.hidden_group.clone() else { return };
        for r in self.rows.iter_mut().filter(|r| r.id == group) {
            for c in &mut r.columns {
                c.model = HIDDEN_MODEL.into();
            }
        }
        for h in self.hits.iter_mut().filter(|h| h.group.as_ref() == Some(&group)) {
            h.model = HIDDEN_MODEL.into();
        }
    }

    /// →: shows a compare's columns, or steps into them when they show.
    pub(crate) fn expand(&mut self) -> ListAction {
        if let Some(Selected::Row(r)) = self.selected_entry() {
            if r.is_compare() && !self.expanded.insert(r.id.clone()) {
                self.selected += 1;
            }
        }
        ListAction::Consumed
    }

    /// ←: hides a compare's columns (from the compare or one of its columns).
    pub(crate) fn collapse(&mut self) -> ListAction {
        let group = match self.selected_entry() {
            Some(Selected::Row(r) | Selected::Column(r, _)) if r.is_compare() => r.id.clone(),
            _ => return ListAction::Consumed,
        };
        if self.expanded.remove(&group) {
            if let Some(i) = self.rows.iter().position(|r| r.id == group) {
                self.selected = self.lines().iter().position(|l| *l == (i, None)).unwrap_or(0);
            }
        }
        ListAction::Consumed
    }
}
