import sys

from archsim.cli import main

sys.exit(main())
