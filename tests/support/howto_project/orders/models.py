"""The orders the outbox how-to places: a cart becomes at most one order."""

from django.db import models


class Cart(models.Model):
    customer = models.CharField(max_length=100)
    total = models.DecimalField(max_digits=10, decimal_places=2)

    def __str__(self) -> str:
        return f"Cart #{self.pk}"


class Order(models.Model):
    cart = models.OneToOneField(Cart, on_delete=models.PROTECT)
    customer = models.CharField(max_length=100)
    total = models.DecimalField(max_digits=10, decimal_places=2)

    def __str__(self) -> str:
        return f"Order #{self.pk}"


class Invoice(models.Model):
    """What the outbox how-to's consumer writes for each order.placed event it receives."""

    order_id = models.BigIntegerField()
    total = models.DecimalField(max_digits=10, decimal_places=2)

    def __str__(self) -> str:
        return f"Invoice for order #{self.order_id}"
