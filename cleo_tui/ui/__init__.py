"""The Textual app. Nothing below `cleo_tui/ui` imports Textual or Rich; nothing here runs SQL.

Layout:
Layers, each importing only those below it (tests/test_layering.py): app → panes → widgets → host.
- `app.py`      CleoApp (the entry point): one mode per pane, the session, popups, the confirm pattern;
                it handles what panes ask (ui/host.py) and shows what the session announces.
- `host.py`     Host: what panes and widgets read of the app (a Protocol), and the requests they post
                to it as messages (confirm, tell, open an observation, switch pane…).
- `registry.py` The panes: tabs, number keys, help sections and palette entries are made from it.
- `first_brain.py` What the app opens on, made before its modules load: the brain, and a very large
                brain's first scan, started already.
- `session.py`  BrainSession, a model: the open brain, tags, pins, counts, undo; `write` (the one
                write path: sweep gate, CLEO's lock, worker, journal, announcing), curate/undo/reload.
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
brain through `self.session`, write through `self.session.write`, ask with `self.confirm`;
handle `on_brain_changed` (and `on_tags_ready` if it shows tags); add one line to
`registry.PANES`. It subscribes to the session's messages itself when mounted, and its keys
reach the footer, help and palette.
"""
