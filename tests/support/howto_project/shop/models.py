"""The shop the exactly-once how-to credits: loyalty points, their postings, and payments."""

from django.db import models


class Customer(models.Model):
    name = models.CharField(max_length=100)
    points = models.IntegerField(default=0)

    class Meta:
        # A debit past zero fails in the database, after the posting was written.
        constraints = [
            models.CheckConstraint(
                condition=models.Q(points__gte=0), name="shop_customer_points_not_negative"
            )
        ]

    def __str__(self) -> str:
        return self.name


class LoyaltyPosting(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT)
    order_id = models.IntegerField()
    points = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.points} points for order #{self.order_id}"


class Payment(models.Model):
    status = models.CharField(max_length=20, default="pending")

    def __str__(self) -> str:
        return f"Payment #{self.pk} ({self.status})"

    def mark_confirmed(self) -> None:
        self.status = "confirmed"
        self.save(update_fields=["status"])
