from cleo_tui.cli import main

raise SystemExit(main())
