"""The checker: `python -m learning.check <exercise>` grades one exercise."""
