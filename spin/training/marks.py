"""Host-program mark labels bracketing each trace node (the replay writes them, the report
reads every node's start and end from them)."""


def start_label(node_id: int) -> str:
    """The mark a rank passes when node ``node_id`` starts."""
    return f"{node_id}>"


def end_label(node_id: int) -> str:
    """The mark a rank passes when node ``node_id`` has ended."""
    return f"{node_id}<"
