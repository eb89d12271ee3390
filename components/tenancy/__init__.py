"""Tenancy: one namespace per team with a GPU ResourceQuota, LimitRange defaults and edit rights for its groups."""
