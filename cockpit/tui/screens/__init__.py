"""Cockpit screens: the main grid, modal dialogs (spawn, confirm, follow-up), transcript review,
memory search."""
