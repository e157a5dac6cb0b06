"""The subcommands, one module per group; `cli.py` imports a module only when its command runs.

To add a command: write `cleo_tui/commands/<name>.py` with `register(add: AddCommand) -> None`
(see `common.py`) and add one line to COMMANDS below, naming the command and its module.
"""

COMMANDS: dict[str, str] = {
    "info": "cleo_tui.commands.brain_cmds",
    "init": "cleo_tui.commands.brain_cmds",
    "demo": "cleo_tui.commands.brain_cmds",
    "prune": "cleo_tui.commands.prune_cmd",
    "observe": "cleo_tui.commands.llm_cmds",
    "reflect": "cleo_tui.commands.llm_cmds",
    "recall": "cleo_tui.commands.recall_cmds",
    "outcome": "cleo_tui.commands.recall_cmds",
    "traces": "cleo_tui.commands.recall_cmds",
    "dedup": "cleo_tui.commands.dedup_cmd",
    "history": "cleo_tui.commands.history_cmd",
    "bridge": "cleo_tui.commands.bridge_cmd",
    "secrets": "cleo_tui.commands.secrets_cmd",
    "serve": "cleo_tui.commands.serve_cmd",
    "evict": "cleo_tui.commands.bulk_cmds",
    "restore": "cleo_tui.commands.bulk_cmds",
    "pin": "cleo_tui.commands.bulk_cmds",
    "export": "cleo_tui.commands.bulk_cmds",
    "sweeps": "cleo_tui.commands.sweeps_cmd",
    "replay": "cleo_tui.commands.replay_cmd",
}
