"""The Paddle front end (feedline.paddle re-exports its DataLoader)."""
