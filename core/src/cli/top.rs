//! `polylock top`: the held locks and their queues, redrawn every interval, in the style of
//! `top` (ratatui). `q` quits, `s` switches the order (longest hold, most waiters).

use std::io::IsTerminal;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Row, Table};
use serde_json::Value;

use super::view::{self, Tracker};
use crate::{Client, Error, ErrorKind};

/// The order of the rows.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum SortBy {
    /// The longest hold first.
    Hold,
    /// The most waiters first.
    Waiters,
}

enum Input {
    Quit,
    Sort,
    Redraw,
}

/// Show the view until `q` (or Ctrl-C).
pub(super) async fn top(
    client: &Client,
    pattern: &str,
    interval: Duration,
    mut sort: SortBy,
    limit: usize,
) -> Result<u8, Error> {
    if !std::io::stdout().is_terminal() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "polylock top draws on a terminal; for a one-shot view use `polylock status --match`",
        ));
    }
    // The first read before the screen switches: a wrong pattern or server fails plainly.
    let mut tracker = Tracker::new();
    let mut lines = view::scan(client, pattern, limit).await?;
    tracker.age(&mut lines);
    let mut terminal = ratatui::try_init()
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("no terminal: {e}")))?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // Keys are read on a thread of their own (crossterm blocks); it ends with the process.
    std::thread::spawn(move || loop {
        let input = match event::read() {
            Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => match k.code {
                KeyCode::Char('q') | KeyCode::Esc => Input::Quit,
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Input::Quit,
                KeyCode::Char('s') => Input::Sort,
                _ => continue,
            },
            Ok(Event::Resize(..)) => Input::Redraw,
            Ok(_) => continue,
            Err(_) => Input::Quit,
        };
        if tx.send(input).is_err() {
            return;
        }
    });
    let mut error: Option<String> = None;
    let result = loop {
        if let Err(e) = terminal.draw(|f| draw(f, pattern, &lines, sort, error.as_deref())) {
            break Err(Error::new(ErrorKind::Internal, format!("drawing: {e}")));
        }
        tokio::select! {
            input = rx.recv() => match input {
                Some(Input::Quit) | None => break Ok(0),
                Some(Input::Sort) => {
                    sort = match sort {
                        SortBy::Hold => SortBy::Waiters,
                        SortBy::Waiters => SortBy::Hold,
                    };
                }
                Some(Input::Redraw) => {}
            },
            _ = tokio::time::sleep(interval) => {
                match view::scan(client, pattern, limit).await {
                    Ok(mut fresh) => {
                        tracker.age(&mut fresh);
                        lines = fresh;
                        error = None;
                    }
                    Err(e) => error = Some(e.to_string()),
                }
            }
        }
    };
    ratatui::restore();
    result
}

fn draw(
    f: &mut ratatui::Frame<'_>,
    pattern: &str,
    lines: &[Value],
    sort: SortBy,
    error: Option<&str>,
) {
    let mut sorted: Vec<&Value> = lines.iter().collect();
    match sort {
        SortBy::Hold => sorted.sort_by_key(|l| std::cmp::Reverse(view::held_for(l))),
        SortBy::Waiters => sorted.sort_by_key(|l| std::cmp::Reverse(view::waiting(l))),
    }
    let held = lines
        .iter()
        .filter(|l| l["holders"].as_array().is_some_and(|h| !h.is_empty()))
        .count();
    let waiting: usize = lines.iter().map(view::waiting).sum();
    let [head, body] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(1)]).areas(f.area());
    let order = match sort {
        SortBy::Hold => "longest hold",
        SortBy::Waiters => "most waiters",
    };
    let mut header = vec![Line::from(shown(format!(
        "polylock top — {pattern}: {} names, {held} held, {waiting} waiting · by {order} · q quit, s order",
        lines.len()
    )))];
    if let Some(e) = error {
        header.push(Line::from(shown(format!("reading the server failed: {e}"))));
    }
    f.render_widget(Paragraph::new(header), head);
    let rows = sorted.iter().map(|l| Row::new(cells(l)));
    let table = Table::new(
        rows,
        [
            Constraint::Percentage(22),
            Constraint::Length(16),
            Constraint::Percentage(30),
            Constraint::Length(9),
            Constraint::Length(4),
            Constraint::Percentage(20),
            Constraint::Length(8),
        ],
    )
    .header(
        Row::new(["NAME", "KIND", "HOLDER", "HELD", "WAIT", "NEXT", "LEASE"])
            .style(Style::default().add_modifier(Modifier::REVERSED)),
    );
    f.render_widget(table, body);
}

/// `text` as a terminal should show it: names and holders are written by others, and a cell
/// is written to the terminal as it is (see `model::shown`).
fn shown(text: String) -> String {
    match crate::model::shown::escape(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

/// One row's cells: name, kind, holders, held for, waiters, the first waiter, the lease left.
fn cells(l: &Value) -> Vec<String> {
    let holders: Vec<String> = l["holders"]
        .as_array()
        .map(|hs| {
            hs.iter()
                .map(|h| match &h["identity"] {
                    Value::Null => h["owner"]
                        .as_str()
                        .or_else(|| h["id"].as_str())
                        .unwrap_or("-")
                        .to_string(),
                    identity => view::who(identity),
                })
                .collect()
        })
        .unwrap_or_default();
    let holders = if let Some(free) = l["available"].as_i64() {
        format!("{} taken, {free} free", l["taken"].as_i64().unwrap_or(0))
    } else if holders.is_empty() {
        "-".to_string()
    } else {
        holders.join(", ")
    };
    let first_waiter = l["waiter_identities"]
        .as_array()
        .and_then(|w| w.first())
        .map(view::who)
        .unwrap_or_default();
    [
        l["name"].as_str().unwrap_or_default().to_string(),
        l["kind"].as_str().unwrap_or_default().to_string(),
        holders,
        seconds(view::held_for(l)),
        view::waiting(l).to_string(),
        first_waiter,
        l["ttl_ms"]
            .as_u64()
            .map(seconds)
            .unwrap_or_else(|| "-".to_string()),
    ]
    .into_iter()
    .map(shown)
    .collect()
}

fn seconds(ms: u64) -> String {
    if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1e3)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use serde_json::json;

    /// A name and a holder written by someone else, with a title-setting sequence, a CSI, a C1
    /// CSI and a bidi override: the screen top draws holds none of them, only their escapes.
    #[test]
    fn a_hostile_name_and_holder_reach_the_screen_escaped() {
        let name = "pay\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}x";
        let holder = "svc@host/1\u{1b}[1A\nforged line";
        let lines = [json!({
            "name": name,
            "kind": "lock",
            "holders": [{"identity": holder}],
            "waiter_identities": [holder],
            "ttl_ms": 5000,
        })];
        let cells = cells(&lines[0]);
        assert!(
            cells[0].starts_with("pay\\u001b]0;pwned\\u0007"),
            "{cells:?}"
        );
        for cell in &cells {
            assert!(
                !cell.chars().any(crate::model::shown::is_obeyed),
                "{cell:?}"
            );
        }
        let mut terminal = ratatui::Terminal::new(TestBackend::new(160, 6)).unwrap();
        terminal
            .draw(|f| draw(f, "pay\u{1b}*", &lines, SortBy::Hold, Some("down\u{1b}[5n")))
            .unwrap();
        let screen: String = terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(
            !screen.chars().any(crate::model::shown::is_obeyed),
            "{screen:?}"
        );
        assert!(screen.contains("pay\\u001b]0;pwn"), "{screen:?}");
        assert!(screen.contains("\\u001b[5n"), "{screen:?}");
    }
}
