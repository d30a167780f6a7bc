"""Cloud text-to-speech adapters: one file a vendor's protocol."""
