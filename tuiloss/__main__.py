from tuiloss.cli import main

raise SystemExit(main())
