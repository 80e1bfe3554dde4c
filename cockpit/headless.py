"""(being written)"""
def add_parser(sub):
    pass
def add_arguments(parser):
    pass
def run(args):
    raise SystemExit("not yet")
