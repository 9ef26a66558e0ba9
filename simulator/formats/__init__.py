"""Readers and writers of other tools' files (nccl-tests logs, MSCCL XML)."""
