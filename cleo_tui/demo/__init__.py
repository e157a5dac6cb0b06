"""The demo brain generator: above `brain` and `recall`, below the CLI and the UI.

`generate_demo(DIR)` writes a realistic, deterministic brain (see `generator`);
`text` holds its vocabularies and templates, `traces` its recall traces, `rows` its columns and
the batch that writes them, `stream` the observations' ids and clock, `hostile` its hostile texts.
"""

from cleo_tui.demo.generator import (
    BATCH_ROWS,
    DEFAULT_OBSERVATIONS,
    DEFAULT_SEED,
    MAX_OBSERVATIONS,
    MIN_OBSERVATIONS,
    demo_directory_problem,
    generate_demo,
)

__all__ = ["BATCH_ROWS", "DEFAULT_OBSERVATIONS", "DEFAULT_SEED", "MAX_OBSERVATIONS", "MIN_OBSERVATIONS",
           "demo_directory_problem", "generate_demo"]
