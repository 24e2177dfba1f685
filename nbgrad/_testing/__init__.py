"""What nbgrad's tests run on that is no part of nbgrad's engine: the strict test device."""
