"""The orders of the backend reference and the task options reference: a cart becomes at most one
order. (The outbox how-tos write their own orders app.)"""

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
