"""The live terminal viewer (Textual). Nothing in tuiloss.core imports this package."""
