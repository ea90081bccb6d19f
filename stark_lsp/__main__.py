import sys

from stark_lsp.cli import main

sys.exit(main())
