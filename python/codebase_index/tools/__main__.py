"""`python -m codebase_index.tools --emit json|ts|markdown` (see `faces.main`)."""

import sys

from .faces import main

sys.exit(main())
