"""The push scheduler: decides what moves where and hands it to a transfertool."""
