from frugalzero.cli import main

raise SystemExit(main())
