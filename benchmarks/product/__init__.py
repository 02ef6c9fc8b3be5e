"""Speed of the product: the simulator, the policies, `origamig solve`, the service and MIG algebra."""
