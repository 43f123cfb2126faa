import sys

from .collector import main

sys.exit(main())
