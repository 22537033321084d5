"""The torch front end (feedline.torch re-exports its DataLoader)."""
