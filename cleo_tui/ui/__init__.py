"""The Textual app. Nothing below `cleo_tui/ui` imports Textual or Rich; nothing here runs SQL.

Layout:
- `app.py`      CleoApp: one mode per pane, the session, the pane registry, popups, the confirm pattern.
- `session.py`  BrainSession: the open brain, tags, pins, counts, undo; curate/undo/reload.
- `messages.py` What the session announces to every pane: BrainChanged, TagsReady, SummaryReady,
                SessionReplaced (dataclasses; handled as on_brain_changed, on_tags_ready, …).
- `keys.py`     Bindings + the user's keymap → the keys shown in the help and the palette.
- `help.py`     The help text; each pane's section is a PaneHelp (key table from its bindings).
- `palette.py`  The command palette: the calling pane's bindings, the app's, the unbound commands.
- `panes/`      One screen per module (Observations, Prune, Review, Traces, records, welcome…).
- `widgets/`    LineTable (over the Listing protocol), detail, modals, chrome (header, tabs,
                PaneScreen), budget bar, chart, renderers.

A new pane: subclass `widgets.chrome.PaneScreen`, set `PANE` (its mode name), `BINDINGS`
(each `Binding` with an id such as "dup.merge"), `WRITE_ACTIONS` and `PANE_HELP`; read the
brain through `self.session`; handle `on_brain_changed` (and `on_tags_ready` if it shows
tags); add it to `app.PANE_MODULES` and `chrome.PANES`. It registers for the
session's messages itself when mounted, and its keys reach the footer, help and palette.
"""
