"""The memory engine: notes -> SQLite (rows + FTS5 + sqlite-vec) -> hybrid search -> preseed block.

Never imports ``cockpit`` (nor Textual, nor anthropic).
"""
