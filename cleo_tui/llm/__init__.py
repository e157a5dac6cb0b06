"""Observer and reflector over Anthropic, OpenAI and OpenAI-compatible providers.

Imports nothing from Textual. The public functions live in `observer`,
`reflector` and `proposals`; `resolve` says which provider a call would use.
"""
